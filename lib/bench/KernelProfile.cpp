//===- lib/bench/KernelProfile.cpp - Per-kernel device time table ---------===//
//
// See kiln/bench/KernelProfile.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/bench/KernelProfile.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

namespace kiln::bench {

std::vector<KernelTime> sumPerKernel(std::vector<KernelTime> steps) {
  std::map<std::string, size_t> index;
  std::vector<KernelTime> kernels;
  for (KernelTime& s : steps) {
    auto [it, added] = index.emplace(s.kernel, kernels.size());
    if (added) {
      s.launches = 1;
      kernels.push_back(std::move(s));
      continue;
    }
    KernelTime& k = kernels[it->second];
    k.launches += 1;
    k.msPerRun += s.msPerRun;
  }
  std::stable_sort(kernels.begin(), kernels.end(), [](const KernelTime& a, const KernelTime& b) { return a.msPerRun > b.msPerRun; });
  return kernels;
}

void printKernelProfile(std::ostream& os, const std::vector<KernelTime>& kernels, int runs, size_t top) {
  double total = 0;
  uint32_t launches = 0;
  for (const KernelTime& k : kernels) total += k.msPerRun, launches += k.launches;
  auto flags = os.flags();
  os << "kernel profile: " << kernels.size() << " kernels, " << launches << " launches per run, " << std::fixed
     << std::setprecision(3) << total << " ms per run on the device (mean of " << runs
     << " runs, each launch timed by CUDA events; kernels launched one by one, library calls from graphs of their own)\n";
  os << "      ms    share  cumul  launches  grid x block        kernel  [schedule]\n";
  double cumulative = 0;
  auto share = [&](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  for (size_t i = 0; i < kernels.size() && i < top; ++i) {
    const KernelTime& k = kernels[i];
    cumulative += k.msPerRun;
    std::ostringstream launch;
    if (k.block[0] * k.block[1] * k.block[2] == 0) launch << "(library)";
    else launch << k.grid[0] << "," << k.grid[1] << "," << k.grid[2] << " x " << k.block[0] * k.block[1] * k.block[2];
    os << std::setw(8) << std::setprecision(3) << k.msPerRun << "  " << std::setw(5) << std::setprecision(1)
       << share(k.msPerRun) << "%  " << std::setw(4) << std::setprecision(0) << share(cumulative) << "%  "
       << std::setw(8) << k.launches << "  " << std::left << std::setw(18) << launch.str() << std::right << "  "
       << k.kernel << (k.schedule.empty() ? "" : "  [" + k.schedule + "]") << "\n";
  }
  if (kernels.size() > top) {
    double rest = total - cumulative;
    os << std::setw(8) << std::setprecision(3) << rest << "  " << std::setw(5) << std::setprecision(1) << share(rest)
       << "%         (" << kernels.size() - top << " more kernels)\n";
  }
  os.flags(flags);
}

}  // namespace kiln::bench
