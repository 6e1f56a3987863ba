//===- kiln/support/ProcessInfo.h - Memory and machine facts -----*- C++ -*-===//
//
// What benchmark records say about where they ran: the process's peak and
// current resident memory (Linux /proc/self/status), the CPU model, logical
// core count, operating system and host name, and the current UTC time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

/// Peak resident set size of this process in bytes (VmHWM); 0 if unknown.
uint64_t peakResidentBytes();
/// Current resident set size in bytes (VmRSS); 0 if unknown.
uint64_t currentResidentBytes();

struct MachineInfo {
  std::string host;
  std::string cpu;  ///< model name from /proc/cpuinfo
  unsigned cores = 0;
  std::string os;   ///< "Linux 6.1.0-... x86_64"
};
MachineInfo describeMachine();

/// "2026-11-22T10:15:03Z"
std::string utcTimestamp();

/// For the command-line tools (not the runtime library, which lives in
/// other people's processes): memory the process frees stays with it for
/// its next allocations instead of going back to the kernel (glibc: large
/// blocks from the heap, not mmap; the heap never trimmed), unless the
/// user set MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_. Compiling
/// writes and drops many weight-sized tensors; each fresh page costs a
/// fault, on a virtual machine ten microseconds or more (BERT-base's
/// combine-parallel-dense: 300 ms of faults, 50 ms with this), at the
/// price of a higher peak (ResNet-50: +16%; docs/performance.md).
void keepFreedMemoryForReuse();

}  // namespace kiln
