//===- lib/runtime/core/Cudnn.h - cuDNN, loaded lazily; convolution plans -*- C++ -*-===//
//
// Library steps of routine CudnnConv run cuDNN convolutions. Like the driver
// and cuBLASLt, cuDNN is not linked: the first artifact with such a step
// dlopens libcudnn.so.9 (KILN_CUDNN names another; the tests use the CPU
// emulation's, tests/emulation/EmulatedCudnn.cpp) and resolves the entry
// points of cuDNN's descriptor API for convolutions. A CudnnConvolution is
// one call's descriptors (NCHW tensors, KCRS filter, cross-correlation as
// ONNX's Conv is, f32 accumulation) and the algorithm cuDNN's heuristic
// ranks first among those that fit the shared workspace. With a bias and a
// ReLU it is one fused cudnnConvolutionBiasActivationForward
// (y = relu(conv(x) + z + bias), z the residual or none), and with a bias
// alone too (IDENTITY activation) where the best algorithm is
// IMPLICIT_PRECOMP_GEMM, the only one cuDNN fuses IDENTITY with; otherwise
// a cudnnConvolutionForward followed by cudnnAddTensor for the bias and the
// residual and cudnnActivationForward for a ReLU, all on the step's stream.
// A call cuDNN refuses at the load-time trial (tryOnce) moves down the
// ranking, fused and unfused, until cuDNN accepts one.
// Math: TF32 tensor cores only with --precision tf32 (CUDNN_FMA_MATH
// otherwise for f32), tensor cores for f16/bf16.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cudnn.h>

#include <string>
#include <utility>
#include <vector>

#include "LibraryStepPlan.h"
#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

struct Cudnn {
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnDestroy) destroy = nullptr;
  decltype(&::cudnnSetStream) setStream = nullptr;
  decltype(&::cudnnGetErrorString) errorString = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) createTensor = nullptr;
  decltype(&::cudnnSetTensor4dDescriptor) setTensor4d = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) destroyTensor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) createFilter = nullptr;
  decltype(&::cudnnSetFilter4dDescriptor) setFilter4d = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) destroyFilter = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) createConvolution = nullptr;
  decltype(&::cudnnSetConvolution2dDescriptor) setConvolution2d = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) setGroupCount = nullptr;
  decltype(&::cudnnSetConvolutionMathType) setMathType = nullptr;
  decltype(&::cudnnGetConvolution2dForwardOutputDim) outputDim = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) destroyConvolution = nullptr;
  decltype(&::cudnnCreateActivationDescriptor) createActivation = nullptr;
  decltype(&::cudnnSetActivationDescriptor) setActivation = nullptr;
  decltype(&::cudnnDestroyActivationDescriptor) destroyActivation = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) forwardAlgorithms = nullptr;
  decltype(&::cudnnConvolutionForward) convolutionForward = nullptr;
  decltype(&::cudnnConvolutionBiasActivationForward) convolutionBiasActivationForward = nullptr;
  decltype(&::cudnnAddTensor) addTensor = nullptr;
  decltype(&::cudnnActivationForward) activationForward = nullptr;
  decltype(&::cudnnGetVersion) getVersion = nullptr;

  /// The process-wide library (loaded once); KE5005 when absent.
  static Expected<const Cudnn*> get();
  /// OK, or KE5006 "<what> failed: CUDNN_STATUS_...".
  Status check(cudnnStatus_t status, const std::string& what) const;
};

/// One cuDNN convolution step, ready to enqueue.
class CudnnConvolution final : public LibraryStepPlan {
 public:
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;
  ~CudnnConvolution() override;
  /// Descriptors for `call` over `operands` (device pointers in the call's
  /// order: X, W, [bias], [Z], Y; fixed for the executor's life) and the
  /// algorithm, for `handle`.
  static Expected<std::unique_ptr<CudnnConvolution>> create(const Cudnn& lib, cudnnHandle_t handle, const LibraryCall& call,
                                                            std::vector<CUdeviceptr> operands);
  Status enqueue(CUdeviceptr workspace, CUstream stream) const override;
  /// Enqueues once; when cuDNN refuses the call (cuDNN 9 refuses some f16
  /// convolutions, ResNet-50's stem at batch 32 among them), tries each
  /// algorithm of the heuristic's ranking, fused and unfused, and keeps the
  /// first that cuDNN accepts.
  Status tryOnce(CUdeviceptr workspace, CUstream stream) override;
  /// Whether bias (and ReLU) run in one cudnnConvolutionBiasActivationForward.
  bool fused() const { return fused_; }

 private:
  CudnnConvolution() = default;
  const Cudnn* lib_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  const LibraryCall* call_ = nullptr;
  std::vector<CUdeviceptr> operands_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;  ///< Z shares y_
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t activation_ = nullptr;  ///< RELU, or IDENTITY for a bias alone
  std::vector<std::pair<cudnnConvolutionFwdAlgo_t, size_t>> candidates_;  ///< algorithm, workspace: best first
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspaceBytes_ = 0;
  bool fused_ = false;  ///< bias (and ReLU) in the convolution call

  /// Whether the fused call can run the epilogue with `algo`.
  bool fusable(cudnnConvolutionFwdAlgo_t algo) const;
  /// Plans candidate `candidate`'s algorithm, fused or not.
  void choose(size_t candidate, bool fused);
};

}  // namespace kiln::runtime
