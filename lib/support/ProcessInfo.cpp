//===- lib/support/ProcessInfo.cpp - Memory and machine facts --------------===//
//
// Reads /proc/self/status and /proc/cpuinfo; falls back to empty values on
// systems without them rather than failing a benchmark. The memory advice
// (mallopt, madvise) is glibc's and Linux's, and does nothing elsewhere.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/ProcessInfo.h"

#include <sys/utsname.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace kiln {
namespace {

constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr int kKeptHeapBytes = 1 << 30;
bool keepingFreedMemory = false;

/// The value of a "Key:   1234 kB" line of /proc/self/status, in bytes.
uint64_t statusField(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") != 0) continue;
    return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  return 0;
}

}  // namespace

uint64_t peakResidentBytes() { return statusField("VmHWM"); }
uint64_t currentResidentBytes() { return statusField("VmRSS"); }

MachineInfo describeMachine() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) m.cpu = line.substr(line.find_first_not_of(' ', colon + 1));
    break;
  }
  m.cores = std::thread::hardware_concurrency();
  struct utsname u;
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return m;
}

std::string utcTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return;  // the user's choice
  mallopt(M_MMAP_THRESHOLD, kKeptHeapBytes);  // blocks up to 1 GiB from the heap, where a freed one is reused
  mallopt(M_TRIM_THRESHOLD, kKeptHeapBytes);  // and the heap's free top kept, up to 1 GiB
  keepingFreedMemory = true;
#endif
}

void mapPagesForWrite(void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE)), from = uintptr_t(data), to = from + bytes;
  const uintptr_t begin = (from + page - 1) / page * page, end = to / page * page;
#if defined(MADV_HUGEPAGE)
  const uintptr_t hugeBegin = (from + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t hugeEnd = to / kHugePageBytes * kHugePageBytes;
  if (hugeEnd > hugeBegin) madvise(reinterpret_cast<void*>(hugeBegin), hugeEnd - hugeBegin, MADV_HUGEPAGE);
#endif
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)data;
  (void)bytes;
#endif
}

void reserveHeapFor(size_t bytes) {
  if (!keepingFreedMemory || bytes < kWeightSizedBytes || bytes > size_t(kKeptHeapBytes)) return;
  void* block = std::malloc(bytes);
  if (!block) return;
  mapPagesForWrite(block, bytes);
  std::free(block);  // back to the heap's top, which keepFreedMemoryForReuse never trims below 1 GiB
}

}  // namespace kiln
