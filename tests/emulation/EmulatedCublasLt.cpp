//===- tests/emulation/EmulatedCublasLt.cpp - cuBLASLt on the CPU ----------===//
//
// A stand-in for libcublasLt.so.13, so that the runtime's library steps
// (lib/runtime/core/CublasLt.cpp) run end to end without a GPU; the runtime
// loads it when KILN_CUBLASLT names it. It implements, from cuBLASLt's
// documented semantics, the entry points a matmul needs: descriptors and
// their attributes, the algorithm heuristic (one algorithm when the shapes
// and types agree, none otherwise, as cuBLASLt reports what it cannot do;
// it assumes the operand alignment the preference allows, 256 bytes unless
// told, and cublasLtMatmul refuses operands aligned less) and
// cublasLtMatmul itself (below).
//
//===----------------------------------------------------------------------===//
#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "EmulatedElements.h"

// cublasLtMatmul, column-major as cuBLAS is:
//
//   D[b] = epilogue(alpha * opA(A[b]) x opB(B[b]) + beta * C[b])
//
// with opX from TRANSA/TRANSB, strided batches (a stride of 0 broadcasts),
// the BIAS / RELU / RELU_BIAS epilogues (a bias per row of D), f32, f16 and
// bf16 data with f32 scale, products summed in double and rounded once to
// D's type (TF32 compute rounds A and B to 10 mantissa bits first). Every
// element it reads or writes must lie in one allocation of the emulated
// driver (KILN_CUDA_DRIVER), so a wrong leading dimension or batch stride
// is an error, not a silent read of a neighbour. A matmul's checks run when
// it is called, its arithmetic in stream order (enqueueOnStream: at once,
// or at each launch of the CUDA graph a capture recorded it in).
//
// kiln_emulated_cublaslt_live_objects() counts handles and descriptors not
// destroyed; kiln_emulated_cublaslt_matmuls() the matmuls run.

namespace {

std::atomic<int> liveObjects{0};
std::atomic<unsigned long long> matmuls{0};
constexpr uint64_t kAlgoMagic = 0x6b696c6e2d6c74ull;  // "kiln-lt"

struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int64_t biasBatchStride = 0;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
};

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t batchStride = 0;
};

struct Handle {
  int unused = 0;
};

/// A matmul preference: the workspace limit and the alignment (bytes) the
/// chosen algorithm may assume of A, B, C and D (cuBLASLt's default: 256).
struct Preference {
  uint64_t workspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256};
};

using kiln::emulation::Element;
using kiln::emulation::inDeviceMemory;
using kiln::emulation::toTf32;

Element elementOf(cudaDataType_t t) { return t == CUDA_R_32F ? Element::F32 : t == CUDA_R_16F ? Element::F16 : Element::BF16; }
size_t sizeOf(cudaDataType_t t) { return kiln::emulation::elementBytes(elementOf(t)); }
bool supported(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }
double load(const void* base, int64_t index, cudaDataType_t t) { return kiln::emulation::loadElement(base, index, elementOf(t)); }
void store(void* base, int64_t index, cudaDataType_t t, double v) { kiln::emulation::storeElement(base, index, elementOf(t), v); }

/// The bytes a layout spans: its last batch's last column's last row.
uint64_t spanBytes(const Layout& l) {
  uint64_t last = uint64_t(l.batch - 1) * uint64_t(l.batchStride) + (l.cols - 1) * uint64_t(l.ld) + l.rows;
  return last * sizeOf(l.type);
}

template <class T>
cublasStatus_t setValue(T& field, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

/// opX(X)'s dims.
void opDims(const Layout& l, int32_t op, uint64_t& rows, uint64_t& cols) {
  rows = op == CUBLAS_OP_N ? l.rows : l.cols;
  cols = op == CUBLAS_OP_N ? l.cols : l.rows;
}

bool shapesAgree(const Desc& d, const Layout& a, const Layout& b, const Layout& c, const Layout& D) {
  uint64_t ar, ac, br, bc;
  opDims(a, d.transa, ar, ac);
  opDims(b, d.transb, br, bc);
  bool types = a.type == b.type && c.type == D.type && a.type == D.type && supported(a.type) && d.scale == CUDA_R_32F;
  bool compute = d.compute == CUBLAS_COMPUTE_32F || (d.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type == CUDA_R_32F);
  bool lds = a.ld >= int64_t(a.rows) && b.ld >= int64_t(b.rows) && D.ld >= int64_t(D.rows) && c.ld >= int64_t(c.rows);
  bool batches = a.batch == D.batch && b.batch == D.batch && c.batch == D.batch && D.batch >= 1;
  bool epilogue = d.epilogue == CUBLASLT_EPILOGUE_DEFAULT || d.epilogue == CUBLASLT_EPILOGUE_RELU ||
                  ((d.epilogue == CUBLASLT_EPILOGUE_BIAS || d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) && d.bias);
  return types && compute && lds && batches && epilogue && ar == D.rows && bc == D.cols && ac == br &&
         c.rows == D.rows && c.cols == D.cols && (d.transa == CUBLAS_OP_N || d.transa == CUBLAS_OP_T) &&
         (d.transb == CUBLAS_OP_N || d.transb == CUBLAS_OP_T) && d.pointerMode == CUBLASLT_POINTER_MODE_HOST;
}

/// A new emulated object of type T behind the opaque handle type H.
template <class T, class H, class... Args>
cublasStatus_t createObject(H* out, Args... args) {
  *out = reinterpret_cast<H>(new T{args...});
  ++liveObjects;
  return CUBLAS_STATUS_SUCCESS;
}

template <class T, class H>
cublasStatus_t destroyObject(H handle) {
  delete reinterpret_cast<T*>(handle);
  --liveObjects;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

int kiln_emulated_cublaslt_live_objects() { return liveObjects.load(); }
unsigned long long kiln_emulated_cublaslt_matmuls() { return matmuls.load(); }

const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

/// The headers' version: the emulation stands in for the toolkit's cuBLASLt.
size_t CUBLASWINAPI cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) { return createObject<Handle>(handle); }
cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) { return destroyObject<Handle>(handle); }

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
  return createObject<Desc>(desc, compute, scale);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return destroyObject<Desc>(desc); }

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  Desc& d = *reinterpret_cast<Desc*>(desc);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return setValue(d.transa, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return setValue(d.transb, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return setValue(d.epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return setValue(d.bias, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return setValue(d.biasBatchStride, buf, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return setValue(d.pointerMode, buf, size);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;  // an attribute the emulation does not model
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  if (!rows || !cols || ld < 1) return CUBLAS_STATUS_INVALID_VALUE;
  return createObject<Layout>(layout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return destroyObject<Layout>(layout);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                             const void* buf, size_t size) {
  Layout& l = *reinterpret_cast<Layout*>(layout);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return setValue(l.batch, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return setValue(l.batchStride, buf, size);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return createObject<Preference>(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return destroyObject<Preference>(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                                 size_t size) {
  Preference& p = *reinterpret_cast<Preference*>(pref);
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return setValue(p.workspace, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return setValue(p.alignment[0], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return setValue(p.alignment[1], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return setValue(p.alignment[2], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return setValue(p.alignment[3], buf, size);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                                           cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                                           cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (requested < 1 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  const Desc& dd = *reinterpret_cast<const Desc*>(desc);
  if (!shapesAgree(dd, *reinterpret_cast<const Layout*>(a), *reinterpret_cast<const Layout*>(b),
                   *reinterpret_cast<const Layout*>(c), *reinterpret_cast<const Layout*>(d)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].algo.data[0] = kAlgoMagic;
  // The algorithm assumes the smallest alignment the preference allows (cuBLASLt's kernels load
  // vectors as wide as it): cublasLtMatmul refuses operands aligned less.
  const Preference defaults;
  const Preference& p = pref ? *reinterpret_cast<const Preference*>(pref) : defaults;
  results[0].algo.data[1] = std::max<uint32_t>(1, *std::min_element(p.alignment, p.alignment + 4));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t adesc, const void* B, cublasLtMatrixLayout_t bdesc,
                                           const void* beta, const void* C, cublasLtMatrixLayout_t cdesc, void* D,
                                           cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspaceBytes, cudaStream_t stream) {
  const Desc& d = *reinterpret_cast<const Desc*>(desc);
  const Layout &a = *reinterpret_cast<const Layout*>(adesc), &b = *reinterpret_cast<const Layout*>(bdesc);
  const Layout &c = *reinterpret_cast<const Layout*>(cdesc), &dl = *reinterpret_cast<const Layout*>(ddesc);
  if (!algo || algo->data[0] != kAlgoMagic || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (!shapesAgree(d, a, b, c, dl)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (workspaceBytes && !inDeviceMemory(workspace, workspaceBytes)) return CUBLAS_STATUS_INVALID_VALUE;
  for (const void* operand : {A, B, C, static_cast<const void*>(D)})
    if (reinterpret_cast<uintptr_t>(operand) % algo->data[1]) return CUBLAS_STATUS_NOT_SUPPORTED;  // misaligned for the algorithm
  const float alphaValue = *static_cast<const float*>(alpha), betaValue = *static_cast<const float*>(beta);
  const bool bias = d.epilogue == CUBLASLT_EPILOGUE_BIAS || d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool relu = d.epilogue == CUBLASLT_EPILOGUE_RELU || d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const uint64_t biasSpan = (uint64_t(dl.batch - 1) * uint64_t(d.biasBatchStride) + dl.rows) * sizeOf(dl.type);
  if (!inDeviceMemory(A, spanBytes(a)) || !inDeviceMemory(B, spanBytes(b)) || !inDeviceMemory(D, spanBytes(dl)) ||
      (betaValue != 0 && !inDeviceMemory(C, spanBytes(c))) || (bias && !inDeviceMemory(d.bias, biasSpan)))
    return CUBLAS_STATUS_INVALID_VALUE;  // an operand outside device memory, or a layout running past its allocation
  const bool tf32 = d.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  uint64_t ar, ac;
  opDims(a, d.transa, ar, ac);
  // Checked now, computed in stream order (a graph capture runs it at every launch) on copies of the descriptors.
  auto compute = [d, a, b, c, dl, A, B, C, D, alphaValue, betaValue, bias, relu, tf32, ac] {
    auto at = [&](const Layout& l, const void* base, int32_t op, int64_t batch, uint64_t i, uint64_t j) {
      const uint64_t row = op == CUBLAS_OP_N ? i : j, col = op == CUBLAS_OP_N ? j : i;
      double v = load(base, batch * l.batchStride + int64_t(col) * l.ld + int64_t(row), l.type);
      return tf32 ? toTf32(v) : v;
    };
    for (int64_t batch = 0; batch < dl.batch; ++batch)
      for (uint64_t j = 0; j < dl.cols; ++j)
        for (uint64_t i = 0; i < dl.rows; ++i) {
          double sum = 0;
          for (uint64_t p = 0; p < ac; ++p) sum += at(a, A, d.transa, batch, i, p) * at(b, B, d.transb, batch, p, j);
          double v = alphaValue * sum;
          if (betaValue != 0) v += betaValue * load(C, batch * c.batchStride + int64_t(j) * c.ld + int64_t(i), c.type);
          if (bias) v += load(d.bias, batch * d.biasBatchStride + int64_t(i), dl.type);
          if (relu) v = v > 0 ? v : 0;
          store(D, batch * dl.batchStride + int64_t(j) * dl.ld + int64_t(i), dl.type, v);
        }
    ++matmuls;
  };
  return kiln::emulation::enqueueOnStream(stream, compute) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // extern "C"
