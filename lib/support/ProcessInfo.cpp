//===- lib/support/ProcessInfo.cpp - Memory and machine facts --------------===//
//
// Reads /proc/self/status and /proc/cpuinfo; falls back to empty values on
// systems without them rather than failing a benchmark.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/ProcessInfo.h"

#include <sys/utsname.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace kiln {
namespace {

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
  constexpr int kLarge = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kLarge);  // blocks up to 1 GiB from the heap, where a freed one is reused
  mallopt(M_TRIM_THRESHOLD, kLarge);  // and the heap's free top kept, up to 1 GiB
#endif
}

}  // namespace kiln
