//===- kiln/runtime/CudaKernelTimer.h - One CUDA kernel, timed ----*- C++ -*-===//
//
// Runs one generated CUDA kernel, or one library call (cuBLASLt, cuDNN: the
// alternative a library tactic would run instead), on the device, alone,
// the way schedule tuning needs it (kiln tune --target cuda, and
// kiln-measure on a GPU box that has none of kiln's build dependencies):
// the kernel's cubin (or PTX, JIT-compiled by the driver) loaded, or the
// call planned as an artifact's library step is, on the device
// KILN_CUDA_DEVICE names, its arguments copied to device buffers once, one
// launch whose outputs are copied back for checking, then timing with CUDA
// events around replays of a CUDA graph of back-to-back launches (recorded
// by stream capture, as a model's steps run in CudaExecutor's graphs, so a
// library call's host-side cost is not timed; a call refusing capture is
// launched directly). Without an L2 flush a sample is enough launches to
// last minSampleMs (warm caches, as in a model where the producer just
// wrote the input); with flushL2 every launch is preceded by an untimed
// device-to-device copy as large as the L2 cache (cold caches, each launch
// timed alone). Errors as in CudaExecutor: KE5005 without a driver or
// device, KE5006 for a failing call (a launch failure names the kernel).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/Executable.h"
#include "kiln/support/Tensor.h"

namespace kiln::runtime {

struct CudaKernelLaunch {
  std::string entry;                     ///< the kernel's name in the image
  std::array<uint32_t, 3> grid{1, 1, 1};   ///< blocks
  std::array<uint32_t, 3> block{1, 1, 1};  ///< threads per block
  std::vector<int64_t> extents;            ///< run-time extents, passed after the buffers (as `long long`)
};

struct CudaTimingOptions {
  int warmup = 1;            ///< untimed launches before the samples
  int repeats = 5;           ///< samples; the median is the result
  double minSampleMs = 1.0;  ///< without flushL2: a sample lasts at least this long
  bool flushL2 = false;      ///< evict the L2 cache before every timed launch
};

class CudaKernelTimer {
 public:
  ~CudaKernelTimer();
  /// Loads `image` (a cubin, or NUL-terminated PTX text) and uploads `args`
  /// (one tensor per kernel parameter, in parameter order).
  static Expected<std::unique_ptr<CudaKernelTimer>> create(const std::vector<uint8_t>& image, const CudaKernelLaunch& launch,
                                                           const std::vector<Tensor>& args);
  /// Plans `call` on `args` (one tensor per operand, in LibraryCall's order)
  /// as a loading artifact plans its library steps, including the load-time
  /// trial (a call the library refuses, with every fallback, is an error here).
  static Expected<std::unique_ptr<CudaKernelTimer>> createLibrary(const LibraryCall& call, const std::vector<Tensor>& args);
  /// Launches once and copies the device buffers of `outputs` (parameter
  /// indices) back into args[i] (generated kernels write only their outputs
  /// and workspaces, so every launch sees the same inputs).
  Status runOnce(std::vector<Tensor>& args, const std::vector<size_t>& outputs);
  /// Median milliseconds of one launch.
  Expected<double> time(const CudaTimingOptions& options);
  /// The device a timer would use: its name ("<name> (sm_90)") and its SM number.
  static Expected<std::pair<std::string, uint32_t>> device();

 private:
  CudaKernelTimer();
  static Expected<std::unique_ptr<CudaKernelTimer>> open(const std::string& name, const std::vector<Tensor>& args);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
