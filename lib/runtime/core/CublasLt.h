//===- lib/runtime/core/CublasLt.h - cuBLASLt, loaded lazily; matmul plans -*- C++ -*-===//
//
// Library steps (Executable.h: LibraryCall) run cuBLASLt matmuls. Like the
// driver, cuBLASLt is not linked: the first artifact with a library step
// dlopens libcublasLt.so.13 (KILN_CUBLASLT names another; the tests use the
// CPU emulation's, tests/emulation/EmulatedCublasLt.cpp) and resolves the
// dozen entry points a matmul needs. A CublasLtMatmul is one call's
// descriptors and algorithm, chosen once at load time by cuBLASLt's
// heuristic (told the operands' actual alignment: the arena's offsets are
// 64-byte multiples, cuBLASLt assumes 256 unless told); enqueue()
// launches it on a stream. kiln's tensors are row-major and cuBLASLt's
// column-major, so D = A x B is computed as D^T = B^T x A^T: the operands
// swap places, and a bias over D's columns is cuBLASLt's bias over its rows.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "LibraryStepPlan.h"
#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetStatusName) statusName = nullptr;
  decltype(&::cublasLtMatmulDescCreate) matmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) matmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) matmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layoutSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  decltype(&::cublasLtGetVersion) getVersion = nullptr;

  /// The process-wide library (loaded once); KE5005 when absent.
  static Expected<const CublasLt*> get();
  /// OK, or KE5006 "<what> failed: CUBLAS_STATUS_...".
  Status check(cublasStatus_t status, const std::string& what) const;
};

/// One cuBLASLt matmul step, ready to enqueue.
class CublasLtMatmul final : public LibraryStepPlan {
 public:
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;
  ~CublasLtMatmul() override;
  /// Descriptors for `call` over `operands` (device pointers in the call's
  /// order: A, B, [bias], [Z], D; fixed for the executor's life) and cuBLASLt's
  /// first choice of algorithm for them.
  static Expected<std::unique_ptr<CublasLtMatmul>> create(const CublasLt& lib, cublasLtHandle_t handle, const LibraryCall& call,
                                                          std::vector<CUdeviceptr> operands);
  /// Enqueues D = epilogue(alpha op(A) op(B) + Z + bias) on `stream` (Z as C with beta 1; without one, C is D, beta 0).
  Status enqueue(CUdeviceptr workspace, CUstream stream) const override;

 private:
  CublasLtMatmul() = default;
  const CublasLt* lib_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  const LibraryCall* call_ = nullptr;
  std::vector<CUdeviceptr> operands_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;  ///< cuBLASLt's A (kiln's B), B (kiln's A), C and D
  /// cuBLASLt's C: the residual Z, else D itself (read with beta 0).
  CUdeviceptr residual() const { return call_->residual ? operands_[operands_.size() - 2] : operands_.back(); }
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace kiln::runtime
