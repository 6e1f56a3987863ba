//===- lib/runtime/core/LibraryStepPlan.h - A planned library call -*- C++ -*-===//
//
// What the CUDA executor holds per library step (Executable.h: LibraryCall):
// the library's descriptors and algorithm for the step's fixed operands,
// chosen once when the artifact loads, and enqueue(), which launches the call
// on a stream. Every call may use one shared device workspace of
// kLibraryWorkspaceBytes (the steps run in stream order, never two at once).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kiln/support/Status.h"

namespace kiln::runtime {

/// Bytes of device workspace a library call may use (cuBLASLt's advice for
/// Hopper; cuDNN algorithms that need more are passed over).
inline constexpr uint64_t kLibraryWorkspaceBytes = uint64_t(32) << 20;

class LibraryStepPlan {
 public:
  virtual ~LibraryStepPlan() = default;
  /// Enqueues the call on `stream` with `workspace` (kLibraryWorkspaceBytes of device memory).
  virtual Status enqueue(CUdeviceptr workspace, CUstream stream) const = 0;
  /// The load-time trial: enqueues the call once, so that a library refusing
  /// it is known before the first run; a plan may switch to a fallback the
  /// library accepts (CudnnConvolution: the unfused sequence).
  virtual Status tryOnce(CUdeviceptr workspace, CUstream stream) { return enqueue(workspace, stream); }
};

}  // namespace kiln::runtime
