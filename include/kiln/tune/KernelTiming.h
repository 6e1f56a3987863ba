//===- kiln/tune/KernelTiming.h - How a candidate is judged -------*- C++ -*-===//
//
// What the in-process measurers and the lean batch measurer (kiln-measure)
// share, so a candidate is judged the same way wherever it runs: the error
// measure against the reference and the check of a run's outputs, the
// timing protocol (CPU wall time; on a GPU, a whole CUDA candidate or a
// library call through runtime::CudaKernelTimer), and the name of the CPU
// the times belong to.
// Depends only on kiln_support and kiln_runtime (no LLVM, no NVRTC).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/CudaKernelTimer.h"
#include "kiln/support/Tensor.h"

namespace kiln::tune {

enum class MeasureStatus : uint8_t { Ok, LowerError, CompileError, WrongOutput, RunError };
/// "ok", "lower-error", "compile-error", "wrong-output", "run-error" (the records' status field).
const char* measureStatusName(MeasureStatus s);

struct MeasureOptions {
  int warmup = 1;            ///< untimed runs after the correctness check
  int repeats = 5;           ///< timed samples; the median is the result
  double minSampleMs = 1.0;  ///< a sample runs the kernel until this much time passed
  double tolerance = 1e-3;   ///< maxRelativeError allowed vs the interpreter
  int buildThreads = 0;      ///< parallel builds (0: one per core)
  bool pinThreads = true;    ///< pin the kernel thread pool while timing
  bool flushL2 = false;      ///< CUDA: evict the L2 cache before every timed launch
  /// CPU: a batch's candidates are timed in interleaved rounds (one sample
  /// of each per round) together with the task's default configuration,
  /// whose median is recorded beside each (MeasureResult::anchorMs), so a
  /// slow moment of the machine hits every candidate of the batch alike and
  /// times of different batches can be compared through their anchors.
  bool interleave = false;
};

/// Largest |got - want| / max(1, |want|, rms(want)) (infinite where one is
/// NaN and the other not): long reductions summed in another order are not
/// mistaken for wrong code where values are large. `got` may be longer (a
/// buffer sized for dynamic dims' maxima): its first elements are compared.
double maxRelativeError(const Tensor& got, const Tensor& want);

/// Output arguments (indices into a candidate's arguments) and the reference
/// value each must hold after a run.
using ExpectedOutputs = std::vector<std::pair<size_t, const Tensor*>>;

/// How one candidate fared once it was built: ok with its time, or why not.
struct KernelOutcome {
  MeasureStatus status = MeasureStatus::Ok;
  double ms = 0;        ///< median time of one run (ok only)
  double maxError = 0;  ///< worst maxRelativeError of the outputs
  std::string error;    ///< why it is not ok
  bool ok() const { return status == MeasureStatus::Ok; }
};

/// The outputs a first run left in `args` against the reference: maxError
/// set, wrong-output (naming the error and the tolerance) beyond `tolerance`.
KernelOutcome checkOutputs(const std::vector<Tensor>& args, const ExpectedOutputs& expected, double tolerance);

/// Median milliseconds of one run: `warmup` runs, one calibration run, then
/// `repeats` samples of enough back-to-back runs to last minSampleMs.
double timeKernel(const std::function<void()>& run, const MeasureOptions& options);
/// Median milliseconds of one run of each of `runs`, timed in interleaved
/// rounds: each gets its warm-up and calibration runs, then `repeats`
/// rounds take one sample of each in turn (an untimed run first, so each
/// sample starts as warm as timeKernel's).
std::vector<double> timeInterleaved(const std::vector<std::function<void()>>& runs, const MeasureOptions& options);

/// A CUDA candidate on the GPU KILN_CUDA_DEVICE names: `image` (its cubin)
/// loaded with `args`, run once, checked (checkOutputs), timed with CUDA
/// events (options' warm-up, repeats, minimum sample and L2 flush). What the
/// driver refuses to load or run is a run-error outcome; no driver or
/// device is an error (KE5005).
Expected<KernelOutcome> measureCudaKernel(const std::vector<uint8_t>& image, const runtime::CudaKernelLaunch& launch,
                                          std::vector<Tensor>& args, const ExpectedOutputs& expected,
                                          const MeasureOptions& options);

/// A library call (cuBLASLt, cuDNN) on that GPU, judged the same way:
/// `args` holds its operands in LibraryCall's order. A call the library
/// refuses, or a library that is not installed, is a run-error outcome.
Expected<KernelOutcome> measureCudaLibraryCall(const runtime::LibraryCall& call, std::vector<Tensor>& args,
                                               const ExpectedOutputs& expected, const MeasureOptions& options);

/// The version of `library` ("cuBLASLt", "cuDNN") this process loads
/// (runtime::libraryVersion), "" where it does not load: what a library
/// call's tuning record carries.
std::string installedLibraryVersion(const std::string& library);

/// "<CPU model>, <N> logical cores": the device key of CPU tuning records.
std::string cpuDeviceName();

}  // namespace kiln::tune
