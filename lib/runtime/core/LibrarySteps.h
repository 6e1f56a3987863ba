//===- lib/runtime/core/LibrarySteps.h - An executor's library steps -*- C++ -*-===//
//
// The CUDA executor's library steps (Executable.h: LibraryCall): the
// libraries' handles (cuBLASLt and cuDNN, each loaded and created only when
// a step uses it; every call is given its stream when enqueued) and a
// LibraryStepPlan per step, made when the artifact loads so that a run only
// enqueues. tryEach() enqueues every plan once at load time (on scratch
// data), so that a call a library refuses fails the load, or falls back,
// rather than the first run. The executor then captures each step's
// enqueue into a CUDA graph (CudaExecutor.cpp), or, where a library refuses
// capture, enqueues the steps on its stream between the graphs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <vector>

#include "LibraryStepPlan.h"
#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

struct CublasLt;
struct Cudnn;

class LibrarySteps {
 public:
  LibrarySteps(const LibrarySteps&) = delete;
  LibrarySteps& operator=(const LibrarySteps&) = delete;
  ~LibrarySteps();
  /// Plans every library step of `exe`, whose buffers live at `pointers`
  /// (per buffer id); the executor's context must be current.
  static Expected<std::unique_ptr<LibrarySteps>> plan(const Executable& exe, const std::vector<CUdeviceptr>& pointers);
  /// Enqueues library step `step` (an index into the executable's steps).
  Status enqueue(size_t step, CUdeviceptr workspace, CUstream stream) const;
  /// Enqueues every step once (LibraryStepPlan::tryOnce); the caller waits for the stream.
  Status tryEach(CUdeviceptr workspace, CUstream stream);

 private:
  LibrarySteps() = default;
  const CublasLt* cublasLt_ = nullptr;
  cublasLtHandle_t cublasLtHandle_ = nullptr;
  const Cudnn* cudnn_ = nullptr;
  cudnnHandle_t cudnnHandle_ = nullptr;
  std::map<size_t, std::unique_ptr<LibraryStepPlan>> plans_;
};

}  // namespace kiln::runtime
