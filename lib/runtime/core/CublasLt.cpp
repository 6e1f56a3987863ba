//===- lib/runtime/core/CublasLt.cpp - cuBLASLt, loaded lazily; matmul plans ===//
//
// See CublasLt.h.
//
//===----------------------------------------------------------------------===//
#include "CublasLt.h"

#include <utility>

#include "SharedLibrary.h"

namespace kiln::runtime {
namespace {

struct Loaded {
  CublasLt lib;
  Status status = Status::ok();
};

Loaded load() {
  Loaded l;
  SharedLibrary library = openSharedLibrary("KILN_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"});
  if (!library.handle) {
    l.status = Error(ErrorCode::DeviceUnavailable,
                     "cuBLASLt (" + library.path + ") not found: the artifact has library steps (compiled with --library-tactics); "
                     "put the CUDA toolkit's lib64 on LD_LIBRARY_PATH, set KILN_CUBLASLT, or recompile without library tactics");
    return l;
  }
  CublasLt& c = l.lib;
  auto need = [&](const char* symbol, auto& fn) { library.need(symbol, fn); };
  need("cublasLtCreate", c.create);
  need("cublasLtDestroy", c.destroy);
  need("cublasLtGetStatusName", c.statusName);
  need("cublasLtMatmulDescCreate", c.matmulDescCreate);
  need("cublasLtMatmulDescDestroy", c.matmulDescDestroy);
  need("cublasLtMatmulDescSetAttribute", c.matmulDescSetAttribute);
  need("cublasLtMatrixLayoutCreate", c.layoutCreate);
  need("cublasLtMatrixLayoutDestroy", c.layoutDestroy);
  need("cublasLtMatrixLayoutSetAttribute", c.layoutSetAttribute);
  need("cublasLtMatmulPreferenceCreate", c.preferenceCreate);
  need("cublasLtMatmulPreferenceDestroy", c.preferenceDestroy);
  need("cublasLtMatmulPreferenceSetAttribute", c.preferenceSetAttribute);
  need("cublasLtMatmulAlgoGetHeuristic", c.algoGetHeuristic);
  need("cublasLtMatmul", c.matmul);
  need("cublasLtGetVersion", c.getVersion);
  if (library.missing)
    l.status = Error(ErrorCode::DeviceUnavailable, library.path + " lacks " + library.missing + " (cuBLASLt too old)");
  return l;
}

cudaDataType_t dataTypeOf(DType t) {
  return t == DType::F16 ? CUDA_R_16F : t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

template <class T>
cublasStatus_t setDesc(const CublasLt& lib, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T value) {
  return lib.matmulDescSetAttribute(desc, attr, &value, sizeof value);
}

template <class T>
cublasStatus_t setLayout(const CublasLt& lib, cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T value) {
  return lib.layoutSetAttribute(layout, attr, &value, sizeof value);
}

/// The largest power of two up to 256 dividing the address (what cuBLASLt may assume of an operand).
uint32_t alignmentOf(CUdeviceptr pointer) {
  uint32_t bytes = 256;
  while (bytes > 1 && pointer % bytes) bytes /= 2;
  return bytes;
}

}  // namespace

Expected<const CublasLt*> CublasLt::get() {
  static const Loaded loaded = load();
  if (!loaded.status.isOk()) return loaded.status.error();
  return &loaded.lib;
}

Status CublasLt::check(cublasStatus_t status, const std::string& what) const {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  const char* name = statusName ? statusName(status) : nullptr;
  return Error(ErrorCode::DeviceFailure, what + " failed: " + (name ? name : "cuBLAS status " + std::to_string(int(status))));
}

CublasLtMatmul::~CublasLtMatmul() {
  if (!lib_) return;
  for (cublasLtMatrixLayout_t l : {a_, b_, d_})
    if (l) lib_->layoutDestroy(l);
  if (desc_) lib_->matmulDescDestroy(desc_);
}

Expected<std::unique_ptr<CublasLtMatmul>> CublasLtMatmul::create(const CublasLt& lib, cublasLtHandle_t handle,
                                                                 const LibraryCall& call, std::vector<CUdeviceptr> operands) {
  if (operands.size() != call.numOperands() || call.routine != LibraryRoutine::CublasLtMatmul)
    return makeError(ErrorCode::Internal, "library call ", call.name, " is not a cuBLASLt matmul of ", operands.size(), " operands");
  std::unique_ptr<CublasLtMatmul> plan(new CublasLtMatmul);
  CublasLtMatmul& mm = *plan;
  mm.lib_ = &lib;
  mm.handle_ = handle;
  mm.call_ = &call;
  mm.operands_ = std::move(operands);
  const std::string what = "cuBLASLt setup of " + call.name;
  auto check = [&](cublasStatus_t s) { return lib.check(s, what); };
  const cublasComputeType_t compute =
      call.dtype == DType::F32 && call.allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KILN_TRY(check(lib.matmulDescCreate(&mm.desc_, compute, CUDA_R_32F)));
  // Column-major D^T [n x m] = op(B)^T [n x k] x op(A)^T [k x m]: cuBLASLt's A is kiln's B, its B kiln's A.
  KILN_TRY(check(setDesc<int32_t>(lib, mm.desc_, CUBLASLT_MATMUL_DESC_TRANSA, call.transB ? CUBLAS_OP_T : CUBLAS_OP_N)));
  KILN_TRY(check(setDesc<int32_t>(lib, mm.desc_, CUBLASLT_MATMUL_DESC_TRANSB, call.transA ? CUBLAS_OP_T : CUBLAS_OP_N)));
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (call.epilogue == LibraryEpilogue::Bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  if (call.epilogue == LibraryEpilogue::Relu) epilogue = CUBLASLT_EPILOGUE_RELU;
  if (call.epilogue == LibraryEpilogue::BiasRelu) epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  KILN_TRY(check(setDesc<uint32_t>(lib, mm.desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue)));
  if (call.hasBias()) {
    KILN_TRY(check(setDesc<const void*>(lib, mm.desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                        reinterpret_cast<const void*>(mm.operands_[2]))));
    KILN_TRY(check(setDesc<int64_t>(lib, mm.desc_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 0)));
  }
  const cudaDataType_t type = dataTypeOf(call.dtype);
  // Stored row-major, kiln's B is [k][n] (transB: [n][k]) and A [m][k] (transA: [k][m]): column-major, their transposes.
  KILN_TRY(check(call.transB ? lib.layoutCreate(&mm.a_, type, uint64_t(call.k), uint64_t(call.n), call.k)
                             : lib.layoutCreate(&mm.a_, type, uint64_t(call.n), uint64_t(call.k), call.n)));
  KILN_TRY(check(call.transA ? lib.layoutCreate(&mm.b_, type, uint64_t(call.m), uint64_t(call.k), call.m)
                             : lib.layoutCreate(&mm.b_, type, uint64_t(call.k), uint64_t(call.m), call.k)));
  KILN_TRY(check(lib.layoutCreate(&mm.d_, type, uint64_t(call.n), uint64_t(call.m), call.n)));
  if (call.batch > 1) {
    const std::pair<cublasLtMatrixLayout_t, int64_t> strides[] = {
        {mm.a_, call.batchB ? call.k * call.n : 0}, {mm.b_, call.m * call.k}, {mm.d_, call.m * call.n}};
    for (auto [layout, stride] : strides) {
      KILN_TRY(check(setLayout<int32_t>(lib, layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(call.batch))));
      KILN_TRY(check(setLayout<int64_t>(lib, layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride)));
    }
  }
  cublasLtMatmulPreference_t preference = nullptr;
  KILN_TRY(check(lib.preferenceCreate(&preference)));
  cublasStatus_t status = lib.preferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &kLibraryWorkspaceBytes, sizeof kLibraryWorkspaceBytes);
  // cuBLASLt assumes 256-byte aligned operands unless told otherwise; the arena's are 64-byte aligned.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, CUdeviceptr> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, mm.operands_[1]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, mm.operands_[0]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, mm.residual()},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, mm.operands_.back()}};
  for (auto [attribute, pointer] : alignments) {
    const uint32_t bytes = alignmentOf(pointer);
    if (status == CUBLAS_STATUS_SUCCESS) status = lib.preferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = lib.algoGetHeuristic(handle, mm.desc_, mm.a_, mm.b_, mm.d_, mm.d_, preference, 1, &result, &found);
  lib.preferenceDestroy(preference);
  KILN_TRY(lib.check(status, "cuBLASLt algorithm choice for " + call.name));
  if (found < 1)
    return makeError(ErrorCode::DeviceFailure, "cuBLASLt has no algorithm for ", call.name, " (", call.describe(),
                     "); recompile without --library-tactics");
  mm.algo_ = result.algo;
  return plan;
}

Status CublasLtMatmul::enqueue(CUdeviceptr workspace, CUstream stream) const {
  const float alpha = call_->alpha, beta = call_->residual ? 1.0f : 0.0f;
  auto* d = reinterpret_cast<void*>(operands_.back());
  const auto* c = reinterpret_cast<const void*>(residual());
  return lib_->check(lib_->matmul(handle_, desc_, &alpha, reinterpret_cast<const void*>(operands_[1]), a_,
                                  reinterpret_cast<const void*>(operands_[0]), b_, &beta, c, d_, d, d_, &algo_,
                                  reinterpret_cast<void*>(workspace), kLibraryWorkspaceBytes,
                                  reinterpret_cast<cudaStream_t>(stream)),
                     "cublasLtMatmul " + call_->name);
}

}  // namespace kiln::runtime
