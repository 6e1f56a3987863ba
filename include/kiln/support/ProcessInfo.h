//===- kiln/support/ProcessInfo.h - Memory and machine facts -----*- C++ -*-===//
//
// What benchmark records say about where they ran: the process's peak and
// current resident memory (Linux /proc/self/status), the CPU model, logical
// core count, operating system and host name, and the current UTC time;
// and how the process takes memory: freed memory kept for reuse, pages
// mapped ahead of the writes that fill them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
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

/// The current time as ISO 8601 UTC to the second ("YYYY-MM-DDThh:mm:ssZ").
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

/// The size from which a buffer is weight-sized: Tensor storage this big
/// gets mapPagesForWrite, and reserveHeapFor maps nothing smaller.
inline constexpr size_t kWeightSizedBytes = size_t(1) << 20;

/// Maps the pages of [data, data + bytes) that are not mapped yet in one
/// call, in 2 MiB pages where the range covers whole ones and the kernel
/// has them (Linux: MADV_HUGEPAGE, MADV_POPULATE_WRITE), for memory about
/// to be written in full. Advice: pages already mapped, older kernels and
/// other systems are left as they are. Writing 100 MB of fresh memory takes
/// about half as long mapped in one call as faulted page by page, and a
/// fortieth in huge pages the kernel has free.
void mapPagesForWrite(void* data, size_t bytes);

/// After keepFreedMemoryForReuse: maps `bytes` of heap, as mapPagesForWrite
/// does, and frees it for the allocations about to come (the ONNX importer
/// copies a model's weights into heap buffers, about the file's size).
/// Does nothing without keepFreedMemoryForReuse, whose untrimmed heap
/// keeps the block, or for less than kWeightSizedBytes or more than 1 GiB.
void reserveHeapFor(size_t bytes);

}  // namespace kiln
