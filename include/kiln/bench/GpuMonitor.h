//===- kiln/bench/GpuMonitor.h - GPU power and temperature -------*- C++ -*-===//
//
// Samples power draw and temperature of GPU 0 through NVML while a benchmark
// runs. NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which the
// NVIDIA driver installs), so kiln neither links nor requires it: without a
// driver the monitor reports why it is unavailable and the benchmark record
// carries null.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace kiln::bench {

struct GpuSample {
  std::string name;         ///< the driver's device name
  double powerMeanW = 0, powerMaxW = 0;
  double temperatureMaxC = 0;
  unsigned samples = 0;
};

class GpuMonitor {
 public:
  /// Opens NVML; on failure available() is false and reason() says why.
  GpuMonitor();
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const;
  const std::string& reason() const;
  /// GPU 0's name, or empty.
  std::string deviceName() const;
  /// Starts sampling every `periodMs` on a background thread.
  void start(unsigned periodMs = 20);
  /// Stops sampling; the summary of what was sampled (nullopt if nothing).
  std::optional<GpuSample> stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::bench
