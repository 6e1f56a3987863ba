//===- kiln/bench/KernelProfile.h - Where a model's device time goes -*- C++ -*-===//
//
// `kiln bench --profile N`: each kernel step of the model timed on the
// device (CUDA events around each launch, N runs, see
// CudaExecutor::profile), summed per kernel (a kernel that several steps
// launch, BERT's per-layer kernels, counts once with its launches), and
// printed slowest first with its schedule (template and configuration), the
// share of the kernels' total and the running share. Steps run one by one
// while profiling, so the total exceeds a CUDA-graph replay's latency by
// the launch gaps; the shares are what to read.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::bench {

/// One kernel's device time per run, summed over the steps that launch it.
struct KernelTime {
  std::string kernel;    ///< entry point, named after the fused ops
  std::string schedule;  ///< "matmul gemm=1,block=64" (template and configuration)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t launches = 0;  ///< per run
  double msPerRun = 0;
};

/// Sums step times (kernel, grid, block, mean ms) per kernel; slowest first.
std::vector<KernelTime> sumPerKernel(std::vector<KernelTime> steps);

/// The table: the `top` slowest kernels, then one line for the rest.
void printKernelProfile(std::ostream& os, const std::vector<KernelTime>& kernels, int runs, size_t top = 25);

}  // namespace kiln::bench
