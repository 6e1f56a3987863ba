//===- tests/emulation/EmulatedCudnn.cpp - cuDNN convolutions on the CPU ---===//
//
// A stand-in for libcudnn.so.9, so that the runtime's cuDNN convolution
// steps (lib/runtime/core/Cudnn.cpp) run end to end without a GPU; the
// runtime loads it when KILN_CUDNN names it. It implements, from cuDNN's
// documented semantics, the descriptor API a forward convolution needs:
// 4-D NCHW tensor and KCRS filter descriptors, convolution descriptors
// (padding, strides, dilations, groups, CUDNN_CONVOLUTION flips the filter,
// CUDNN_CROSS_CORRELATION does not; math type), the output-size arithmetic,
// and the four calls below.
//
//===----------------------------------------------------------------------===//
#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "EmulatedElements.h"

// The calls, and how they check their callers:
//
//   cudnnConvolutionForward                y = alpha * conv(x, w) + beta * y
//   cudnnConvolutionBiasActivationForward  y = act(alpha1 * conv(x, w) + alpha2 * z + bias)
//   cudnnAddTensor                         c = alpha * a + beta * c (a broadcast where its dims are 1)
//   cudnnActivationForward                 y = alpha * act(x) + beta * y (RELU; in place allowed)
//
// where a zero beta (alpha2) means y (z) is not read, as cuDNN documents for
// its scaling parameters. f32, f16 and bf16 data, f32 compute type; products
// are summed in double and rounded once to y's type; f32 data with
// CUDNN_DEFAULT_MATH is rounded to TF32 first (what Ampere+ tensor cores
// may do), CUDNN_FMA_MATH is exact. The algorithm heuristic ranks, like the
// real one can, an unsupported algorithm and one that needs 1 GiB of
// workspace above the implicit GEMMs, so a caller must honour status and
// memory; the convolutions refuse a workspace smaller than their algorithm
// needs, an IDENTITY activation in the fused call with any algorithm but
// IMPLICIT_PRECOMP_GEMM (cuDNN's restriction), and any operand whose bytes
// are not in one allocation of the emulated driver. A call's checks run when
// it is made, its arithmetic in the order of the handle's stream
// (enqueueOnStream: at once, or at each launch of the CUDA graph a capture
// recorded it in).
// Refusals the real cuDNN 9 makes, for the runtime's fallbacks:
// with KILN_EMULATED_CUDNN_REFUSE_FUSED set, the fused call refuses 16-bit
// data with CUDNN_STATUS_BAD_PARAM (the runtime must use the unfused
// calls); with KILN_EMULATED_CUDNN_REFUSE_PRECOMP, both convolution calls
// refuse 16-bit data with IMPLICIT_PRECOMP_GEMM, the heuristic's first
// choice (as for ResNet-50's f16 stem convolution at batch 32; the runtime
// must move down the ranking).
//
// kiln_emulated_cudnn_live_objects() counts handles and descriptors not
// destroyed; kiln_emulated_cudnn_convolutions() the convolutions run.

namespace {

using kiln::emulation::Element;
using kiln::emulation::inDeviceMemory;

std::atomic<int> liveObjects{0};
std::atomic<unsigned long long> convolutions{0};

/// Workspace the emulated IMPLICIT_PRECOMP_GEMM asks for (and checks it is given), and what FFT asks for.
constexpr size_t kPrecompWorkspace = 4096, kFftWorkspace = size_t(1) << 30;

struct Handle {
  cudaStream_t stream = nullptr;
};
struct Tensor {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;  ///< 0: not set
  int64_t elements() const { return int64_t(n) * c * h * w; }
};
struct Filter {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, h = 0, w = 0;
};
struct Conv {
  int padH = 0, padW = 0, strideH = 0, strideW = 0, dilH = 0, dilW = 0;  ///< strides 0: not set
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct Activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  bool set = false;
};

template <class T, class H>
cudnnStatus_t createObject(H* out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  *out = reinterpret_cast<H>(new T{});
  ++liveObjects;
  return CUDNN_STATUS_SUCCESS;
}

template <class T, class H>
cudnnStatus_t destroyObject(H handle) {
  delete reinterpret_cast<T*>(handle);
  if (handle) --liveObjects;
  return CUDNN_STATUS_SUCCESS;
}

template <class T, class H>
T& object(H handle) {
  return *reinterpret_cast<T*>(handle);
}

bool supported(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16; }
Element elementOf(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT ? Element::F32 : t == CUDNN_DATA_HALF ? Element::F16 : Element::BF16;
}
uint64_t bytesOf(int64_t elements, cudnnDataType_t t) { return uint64_t(elements) * kiln::emulation::elementBytes(elementOf(t)); }

/// The output dims of convolving `x` with `w`, or false when they do not fit together.
bool outputDims(const Conv& cv, const Tensor& x, const Filter& w, int& n, int& c, int& h, int& wd) {
  if (!x.n || !w.k || !cv.strideH || cv.groups < 1 || x.c != w.c * cv.groups || w.k % cv.groups) return false;
  n = x.n, c = w.k;
  h = (x.h + 2 * cv.padH - (cv.dilH * (w.h - 1) + 1)) / cv.strideH + 1;
  wd = (x.w + 2 * cv.padW - (cv.dilW * (w.w - 1) + 1)) / cv.strideW + 1;
  return h >= 1 && wd >= 1;
}

/// Whether x, w, conv and y form a supported forward convolution.
bool configurationOk(const Conv& cv, const Tensor& x, const Filter& w, const Tensor& y) {
  int n, c, h, wd;
  return outputDims(cv, x, w, n, c, h, wd) && y.n == n && y.c == c && y.h == h && y.w == wd && supported(x.type) &&
         x.type == w.type && x.type == y.type && cv.compute == CUDNN_DATA_FLOAT;
}

size_t workspaceOf(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ? kPrecompWorkspace
         : algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT                ? kFftWorkspace
                                                                 : 0;
}

bool runnable(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT;
}

/// conv(x, w) at output element (n, k, oh, ow), in double.
double convolveAt(const Conv& cv, const Tensor& xd, const void* x, const Filter& wd, const void* w, int n, int k, int oh, int ow) {
  const bool tf32 = xd.type == CUDNN_DATA_FLOAT && cv.math == CUDNN_DEFAULT_MATH;
  const int perGroup = wd.k / cv.groups, g = k / perGroup;
  double sum = 0;
  for (int c = 0; c < wd.c; ++c)
    for (int r = 0; r < wd.h; ++r)
      for (int s = 0; s < wd.w; ++s) {
        const int ih = oh * cv.strideH - cv.padH + r * cv.dilH, iw = ow * cv.strideW - cv.padW + s * cv.dilW;
        if (ih < 0 || ih >= xd.h || iw < 0 || iw >= xd.w) continue;
        const int fr = cv.mode == CUDNN_CONVOLUTION ? wd.h - 1 - r : r, fs = cv.mode == CUDNN_CONVOLUTION ? wd.w - 1 - s : s;
        double xv = kiln::emulation::loadElement(x, ((int64_t(n) * xd.c + g * wd.c + c) * xd.h + ih) * xd.w + iw, elementOf(xd.type));
        double wv = kiln::emulation::loadElement(w, ((int64_t(k) * wd.c + c) * wd.h + fr) * wd.w + fs, elementOf(wd.type));
        if (tf32) xv = kiln::emulation::toTf32(xv), wv = kiln::emulation::toTf32(wv);
        sum += xv * wv;
      }
  return sum;
}

/// The checks both convolution calls make before computing.
cudnnStatus_t checkConvolution(const Tensor& xd, const void* x, const Filter& wd, const void* w, const Conv& cv,
                               cudnnConvolutionFwdAlgo_t algo, const void* workspace, size_t workspaceBytes, const Tensor& yd,
                               const void* y) {
  if (!configurationOk(cv, xd, wd, yd)) return CUDNN_STATUS_BAD_PARAM;
  if (!runnable(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  const char* refuse = std::getenv("KILN_EMULATED_CUDNN_REFUSE_PRECOMP");
  if (refuse && *refuse && xd.type != CUDNN_DATA_FLOAT && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_BAD_PARAM;  // the heuristic's first choice refused, fused or not
  if (workspaceBytes < workspaceOf(algo) || (workspaceBytes && !inDeviceMemory(workspace, workspaceBytes)))
    return CUDNN_STATUS_BAD_PARAM;
  if (!inDeviceMemory(x, bytesOf(xd.elements(), xd.type)) ||
      !inDeviceMemory(w, bytesOf(int64_t(wd.k) * wd.c * wd.h * wd.w, wd.type)) || !inDeviceMemory(y, bytesOf(yd.elements(), yd.type)))
    return CUDNN_STATUS_BAD_PARAM;  // an operand outside device memory, or a descriptor larger than its allocation
  return CUDNN_STATUS_SUCCESS;
}

/// Calls f(n, c, h, w, index) for every element of an NCHW tensor, in memory order.
template <class F>
void forEachElement(const Tensor& t, F f) {
  int64_t at = 0;
  for (int n = 0; n < t.n; ++n)
    for (int c = 0; c < t.c; ++c)
      for (int h = 0; h < t.h; ++h)
        for (int w = 0; w < t.w; ++w) f(n, c, h, w, at++);
}

double relu(double v) { return v > 0 ? v : (v != v ? v : 0); }

/// Enqueues a checked call's arithmetic on the handle's stream (copies of its descriptors in `work`).
template <class Work>
cudnnStatus_t enqueue(cudnnHandle_t handle, Work work) {
  return kiln::emulation::enqueueOnStream(object<Handle>(handle).stream, std::move(work)) ? CUDNN_STATUS_SUCCESS
                                                                                          : CUDNN_STATUS_EXECUTION_FAILED;
}

}  // namespace

extern "C" {

int kiln_emulated_cudnn_live_objects() { return liveObjects.load(); }
unsigned long long kiln_emulated_cudnn_convolutions() { return convolutions.load(); }

const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR";
  }
}

/// The headers' version: the emulation stands in for the toolkit's cuDNN.
size_t CUDNNWINAPI cudnnGetVersion(void) { return CUDNN_VERSION; }

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) { return createObject<Handle>(handle); }
cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) { return destroyObject<Handle>(handle); }
cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  object<Handle>(handle).stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { return createObject<Tensor>(d); }
cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return destroyObject<Tensor>(d); }
cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                                     int n, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;  // all the emulation models
  if (n < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  object<Tensor>(d) = Tensor{type, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { return createObject<Filter>(d); }
cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return destroyObject<Filter>(d); }
cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                                     int k, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
  if (k < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  object<Filter>(d) = Filter{type, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) { return createObject<Conv>(d); }
cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return destroyObject<Conv>(d); }
cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int padH, int padW, int u, int v,
                                                          int dilH, int dilW, cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t compute) {
  if (padH < 0 || padW < 0 || u < 1 || v < 1 || dilH < 1 || dilW < 1) return CUDNN_STATUS_BAD_PARAM;
  Conv& cv = object<Conv>(d);
  cv.padH = padH, cv.padW = padW, cv.strideH = u, cv.strideW = v, cv.dilH = dilH, cv.dilW = dilW, cv.mode = mode;
  cv.compute = compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
  object<Conv>(d).groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  object<Conv>(d).math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t d,
                                                                const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
                                                                int* n, int* c, int* h, int* wd) {
  return outputDims(object<Conv>(d), object<Tensor>(x), object<Filter>(w), *n, *c, *h, *wd) ? CUDNN_STATUS_SUCCESS
                                                                                               : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) { return createObject<Activation>(d); }
cudnnStatus_t CUDNNWINAPI cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) { return destroyObject<Activation>(d); }
cudnnStatus_t CUDNNWINAPI cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                                       cudnnNanPropagation_t, double) {
  if (mode != CUDNN_ACTIVATION_RELU && mode != CUDNN_ACTIVATION_IDENTITY) return CUDNN_STATUS_NOT_SUPPORTED;
  object<Activation>(d) = Activation{mode, true};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                                 const cudnnFilterDescriptor_t w,
                                                                 const cudnnConvolutionDescriptor_t conv,
                                                                 const cudnnTensorDescriptor_t y, const int requested,
                                                                 int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  if (requested < 1 || !returned || !perf) return CUDNN_STATUS_BAD_PARAM;
  *returned = 0;
  if (!configurationOk(object<Conv>(conv), object<Tensor>(x), object<Filter>(w), object<Tensor>(y)))
    return CUDNN_STATUS_BAD_PARAM;
  const std::pair<cudnnConvolutionFwdAlgo_t, cudnnStatus_t> ranking[] = {
      {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_STATUS_NOT_SUPPORTED},
      {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_STATUS_SUCCESS},
      {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_STATUS_SUCCESS},
      {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_STATUS_SUCCESS}};
  for (const auto& [algo, status] : ranking) {
    if (*returned == requested) break;
    cudnnConvolutionFwdAlgoPerf_t& p = perf[(*returned)++];
    std::memset(&p, 0, sizeof p);
    p.algo = algo;
    p.status = status;
    p.time = float(*returned);
    p.memory = workspaceOf(algo);
    p.mathType = object<Conv>(conv).math;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                                  const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
                                                  const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                                  void* workspace, size_t workspaceBytes, const void* beta,
                                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  const Tensor &xd = object<Tensor>(xDesc), &yd = object<Tensor>(yDesc);
  const Filter& wd = object<Filter>(wDesc);
  const Conv& cv = object<Conv>(convDesc);
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t s = checkConvolution(xd, x, wd, w, cv, algo, workspace, workspaceBytes, yd, y); s != CUDNN_STATUS_SUCCESS)
    return s;
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  return enqueue(handle, [xd, yd, wd, cv, x, w, y, a, b] {
    const Element yt = elementOf(yd.type);
    forEachElement(yd, [&](int n, int k, int oh, int ow, int64_t at) {
      double v = a * convolveAt(cv, xd, x, wd, w, n, k, oh, ow);
      if (b != 0) v += b * kiln::emulation::loadElement(y, at, yt);
      kiln::emulation::storeElement(y, at, yt, v);
    });
    ++convolutions;
  });
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnFilterDescriptor_t wDesc,
    const void* w, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo, void* workspace,
    size_t workspaceBytes, const void* alpha2, const cudnnTensorDescriptor_t zDesc, const void* z,
    const cudnnTensorDescriptor_t biasDesc, const void* bias, const cudnnActivationDescriptor_t activationDesc,
    const cudnnTensorDescriptor_t yDesc, void* y) {
  const Tensor &xd = object<Tensor>(xDesc), &yd = object<Tensor>(yDesc), &zd = object<Tensor>(zDesc);
  const Tensor& bd = object<Tensor>(biasDesc);
  const Filter& wd = object<Filter>(wDesc);
  const Conv& cv = object<Conv>(convDesc);
  const Activation& act = object<Activation>(activationDesc);
  if (!alpha1 || !alpha2 || !act.set) return CUDNN_STATUS_BAD_PARAM;
  const char* refuse = std::getenv("KILN_EMULATED_CUDNN_REFUSE_FUSED");
  if (refuse && *refuse && xd.type != CUDNN_DATA_FLOAT)
    return CUDNN_STATUS_BAD_PARAM;  // as cuDNN 9 does for ResNet-50's f16 stem convolution
  if (act.mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (cudnnStatus_t s = checkConvolution(xd, x, wd, w, cv, algo, workspace, workspaceBytes, yd, y); s != CUDNN_STATUS_SUCCESS)
    return s;
  const double a1 = *static_cast<const float*>(alpha1), a2 = *static_cast<const float*>(alpha2);
  if (bd.n != 1 || bd.c != yd.c || bd.h != 1 || bd.w != 1 || bd.type != yd.type ||
      !inDeviceMemory(bias, bytesOf(bd.elements(), bd.type)))
    return CUDNN_STATUS_BAD_PARAM;
  if (zd.n != yd.n || zd.c != yd.c || zd.h != yd.h || zd.w != yd.w || zd.type != yd.type ||
      (a2 != 0 && !inDeviceMemory(z, bytesOf(zd.elements(), zd.type))))
    return CUDNN_STATUS_BAD_PARAM;
  const bool applyRelu = act.mode == CUDNN_ACTIVATION_RELU;
  return enqueue(handle, [xd, yd, wd, cv, x, w, y, z, bias, a1, a2, applyRelu] {
    const Element yt = elementOf(yd.type);
    forEachElement(yd, [&](int n, int k, int oh, int ow, int64_t at) {
      double v = a1 * convolveAt(cv, xd, x, wd, w, n, k, oh, ow) + kiln::emulation::loadElement(bias, k, yt);
      if (a2 != 0) v += a2 * kiln::emulation::loadElement(z, at, yt);
      kiln::emulation::storeElement(y, at, yt, applyRelu ? relu(v) : v);
    });
    ++convolutions;
  });
}

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc, const void* A,
                                         const void* beta, const cudnnTensorDescriptor_t cDesc, void* C) {
  const Tensor &ad = object<Tensor>(aDesc), &cd = object<Tensor>(cDesc);
  if (!alpha || !beta || ad.type != cd.type || !supported(cd.type)) return CUDNN_STATUS_BAD_PARAM;
  const int adims[] = {ad.n, ad.c, ad.h, ad.w}, cdims[] = {cd.n, cd.c, cd.h, cd.w};
  for (int d = 0; d < 4; ++d)
    if (adims[d] != cdims[d] && adims[d] != 1) return CUDNN_STATUS_BAD_PARAM;
  if (!inDeviceMemory(A, bytesOf(ad.elements(), ad.type)) || !inDeviceMemory(C, bytesOf(cd.elements(), cd.type)))
    return CUDNN_STATUS_BAD_PARAM;
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  return enqueue(handle, [ad, cd, A, C, a, b] {
    const Element t = elementOf(cd.type);
    forEachElement(cd, [&](int n, int c, int h, int w, int64_t at) {
      const int64_t from = ((int64_t(n % ad.n) * ad.c + c % ad.c) * ad.h + h % ad.h) * ad.w + w % ad.w;
      double v = a * kiln::emulation::loadElement(A, from, t);
      if (b != 0) v += b * kiln::emulation::loadElement(C, at, t);
      kiln::emulation::storeElement(C, at, t, v);
    });
  });
}

cudnnStatus_t CUDNNWINAPI cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void* alpha,
                                                 const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
                                                 const cudnnTensorDescriptor_t yDesc, void* y) {
  const Tensor &xd = object<Tensor>(xDesc), &yd = object<Tensor>(yDesc);
  const Activation& act = object<Activation>(activationDesc);
  if (!alpha || !beta || !act.set || act.mode != CUDNN_ACTIVATION_RELU) return CUDNN_STATUS_BAD_PARAM;
  if (xd.n != yd.n || xd.c != yd.c || xd.h != yd.h || xd.w != yd.w || xd.type != yd.type || !supported(yd.type))
    return CUDNN_STATUS_BAD_PARAM;
  if (!inDeviceMemory(x, bytesOf(xd.elements(), xd.type)) || !inDeviceMemory(y, bytesOf(yd.elements(), yd.type)))
    return CUDNN_STATUS_BAD_PARAM;
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  return enqueue(handle, [yd, x, y, a, b] {
    const Element t = elementOf(yd.type);
    for (int64_t i = 0; i < yd.elements(); ++i) {
      double v = a * relu(kiln::emulation::loadElement(x, i, t));
      if (b != 0) v += b * kiln::emulation::loadElement(y, i, t);
      kiln::emulation::storeElement(y, i, t, v);
    }
  });
}

}  // extern "C"
