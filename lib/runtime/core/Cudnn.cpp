//===- lib/runtime/core/Cudnn.cpp - cuDNN, loaded lazily; convolution plans ===//
//
// See Cudnn.h.
//
//===----------------------------------------------------------------------===//
#include "Cudnn.h"

#include "SharedLibrary.h"

namespace kiln::runtime {
namespace {

struct Loaded {
  Cudnn lib;
  Status status = Status::ok();
};

Loaded load() {
  Loaded l;
  SharedLibrary library = openSharedLibrary("KILN_CUDNN", {"libcudnn.so.9", "libcudnn.so"});
  if (!library.handle) {
    l.status = Error(ErrorCode::DeviceUnavailable,
                     "cuDNN (" + library.path + ") not found: the artifact has cuDNN convolution steps (compiled with "
                     "--library-tactics); put cuDNN 9's lib directory on LD_LIBRARY_PATH, set KILN_CUDNN, or recompile "
                     "without library tactics");
    return l;
  }
  Cudnn& c = l.lib;
  auto need = [&](const char* symbol, auto& fn) { library.need(symbol, fn); };
  need("cudnnCreate", c.create);
  need("cudnnDestroy", c.destroy);
  need("cudnnSetStream", c.setStream);
  need("cudnnGetErrorString", c.errorString);
  need("cudnnCreateTensorDescriptor", c.createTensor);
  need("cudnnSetTensor4dDescriptor", c.setTensor4d);
  need("cudnnDestroyTensorDescriptor", c.destroyTensor);
  need("cudnnCreateFilterDescriptor", c.createFilter);
  need("cudnnSetFilter4dDescriptor", c.setFilter4d);
  need("cudnnDestroyFilterDescriptor", c.destroyFilter);
  need("cudnnCreateConvolutionDescriptor", c.createConvolution);
  need("cudnnSetConvolution2dDescriptor", c.setConvolution2d);
  need("cudnnSetConvolutionGroupCount", c.setGroupCount);
  need("cudnnSetConvolutionMathType", c.setMathType);
  need("cudnnGetConvolution2dForwardOutputDim", c.outputDim);
  need("cudnnDestroyConvolutionDescriptor", c.destroyConvolution);
  need("cudnnCreateActivationDescriptor", c.createActivation);
  need("cudnnSetActivationDescriptor", c.setActivation);
  need("cudnnDestroyActivationDescriptor", c.destroyActivation);
  need("cudnnGetConvolutionForwardAlgorithm_v7", c.forwardAlgorithms);
  need("cudnnConvolutionForward", c.convolutionForward);
  need("cudnnConvolutionBiasActivationForward", c.convolutionBiasActivationForward);
  need("cudnnAddTensor", c.addTensor);
  need("cudnnActivationForward", c.activationForward);
  need("cudnnGetVersion", c.getVersion);
  if (library.missing)
    l.status = Error(ErrorCode::DeviceUnavailable, library.path + " lacks " + library.missing + " (cuDNN 9 needed)");
  return l;
}

cudnnDataType_t dataTypeOf(DType t) {
  return t == DType::F16 ? CUDNN_DATA_HALF : t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

const void* pointer(CUdeviceptr p) { return reinterpret_cast<const void*>(p); }

}  // namespace

Expected<const Cudnn*> Cudnn::get() {
  static const Loaded loaded = load();
  if (!loaded.status.isOk()) return loaded.status.error();
  return &loaded.lib;
}

Status Cudnn::check(cudnnStatus_t status, const std::string& what) const {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  const char* name = errorString ? errorString(status) : nullptr;
  return Error(ErrorCode::DeviceFailure, what + " failed: " + (name ? name : "cuDNN status " + std::to_string(int(status))));
}

CudnnConvolution::~CudnnConvolution() {
  if (!lib_) return;
  for (cudnnTensorDescriptor_t t : {x_, y_, bias_})
    if (t) lib_->destroyTensor(t);
  if (w_) lib_->destroyFilter(w_);
  if (conv_) lib_->destroyConvolution(conv_);
  if (activation_) lib_->destroyActivation(activation_);
}

Expected<std::unique_ptr<CudnnConvolution>> CudnnConvolution::create(const Cudnn& lib, cudnnHandle_t handle,
                                                                     const LibraryCall& call, std::vector<CUdeviceptr> operands) {
  if (operands.size() != call.numOperands() || call.routine != LibraryRoutine::CudnnConv)
    return makeError(ErrorCode::Internal, "library call ", call.name, " is not a cuDNN convolution of ", operands.size(), " operands");
  std::unique_ptr<CudnnConvolution> plan(new CudnnConvolution);
  CudnnConvolution& p = *plan;
  p.lib_ = &lib;
  p.handle_ = handle;
  p.call_ = &call;
  p.operands_ = std::move(operands);
  const std::string what = "cuDNN setup of " + call.name;
  auto check = [&](cudnnStatus_t s) { return lib.check(s, what); };
  const ConvGeometry& g = call.conv;
  const cudnnDataType_t type = dataTypeOf(call.dtype);
  const int outH = int(g.outHeight()), outW = int(g.outWidth());
  KILN_TRY(check(lib.createTensor(&p.x_)));
  KILN_TRY(check(lib.setTensor4d(p.x_, CUDNN_TENSOR_NCHW, type, int(call.batch), int(g.channels), int(g.height), int(g.width))));
  KILN_TRY(check(lib.createTensor(&p.y_)));
  KILN_TRY(check(lib.setTensor4d(p.y_, CUDNN_TENSOR_NCHW, type, int(call.batch), int(g.outChannels), outH, outW)));
  if (call.hasBias()) {
    KILN_TRY(check(lib.createTensor(&p.bias_)));
    KILN_TRY(check(lib.setTensor4d(p.bias_, CUDNN_TENSOR_NCHW, type, 1, int(g.outChannels), 1, 1)));
  }
  KILN_TRY(check(lib.createFilter(&p.w_)));
  KILN_TRY(check(lib.setFilter4d(p.w_, type, CUDNN_TENSOR_NCHW, int(g.outChannels), int(g.channels / g.groups), int(g.kernelH),
                                 int(g.kernelW))));
  KILN_TRY(check(lib.createConvolution(&p.conv_)));
  KILN_TRY(check(lib.setConvolution2d(p.conv_, int(g.padH), int(g.padW), int(g.strideH), int(g.strideW), int(g.dilationH),
                                      int(g.dilationW), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)));
  KILN_TRY(check(lib.setGroupCount(p.conv_, int(g.groups))));
  const cudnnMathType_t math = call.dtype != DType::F32 ? CUDNN_TENSOR_OP_MATH
                               : call.allowTf32         ? CUDNN_DEFAULT_MATH  // TF32 allowed on sm_80+
                                                        : CUDNN_FMA_MATH;
  KILN_TRY(check(lib.setMathType(p.conv_, math)));
  if (call.hasRelu() || call.hasBias()) {  // the fused call's (IDENTITY without a ReLU) or cudnnActivationForward's
    KILN_TRY(check(lib.createActivation(&p.activation_)));
    KILN_TRY(check(lib.setActivation(p.activation_, call.hasRelu() ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                     CUDNN_PROPAGATE_NAN, 0.0)));
  }
  // cuDNN's own shape arithmetic must agree with the artifact's.
  int n = 0, c = 0, h = 0, w = 0;
  KILN_TRY(check(lib.outputDim(p.conv_, p.x_, p.w_, &n, &c, &h, &w)));
  if (n != call.batch || c != g.outChannels || h != outH || w != outW)
    return makeError(ErrorCode::DeviceFailure, "cuDNN computes ", call.name, "'s result as ", n, "x", c, "x", h, "x", w,
                     ", the artifact says ", call.batch, "x", g.outChannels, "x", outH, "x", outW);
  // The heuristic's ranking: the algorithms that work within the workspace, best first.
  cudnnConvolutionFwdAlgoPerf_t ranked[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  KILN_TRY(lib.check(lib.forwardAlgorithms(handle, p.x_, p.w_, p.conv_, p.y_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, ranked),
                     "cuDNN algorithm choice for " + call.name));
  for (int i = 0; i < returned; ++i)
    if (ranked[i].status == CUDNN_STATUS_SUCCESS && ranked[i].memory <= kLibraryWorkspaceBytes)
      p.candidates_.push_back({ranked[i].algo, ranked[i].memory});
  if (!p.candidates_.empty()) {
    p.choose(0, p.fusable(p.candidates_[0].first));
    return plan;
  }
  return makeError(ErrorCode::DeviceFailure, "cuDNN has no algorithm for ", call.name, " (", call.describe(), ") within ",
                   kLibraryWorkspaceBytes >> 20, " MiB of workspace; recompile without --library-tactics");
}

Status CudnnConvolution::enqueue(CUdeviceptr workspace, CUstream stream) const {
  const LibraryCall& c = *call_;
  KILN_TRY(lib_->check(lib_->setStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream"));
  const float one = 1.0f, zero = 0.0f;
  const void* x = pointer(operands_[0]);
  const void* w = pointer(operands_[1]);
  const void* bias = c.hasBias() ? pointer(operands_[2]) : nullptr;
  const void* z = c.residual ? pointer(operands_[operands_.size() - 2]) : nullptr;
  void* y = reinterpret_cast<void*>(operands_.back());
  void* ws = reinterpret_cast<void*>(workspace);
  if (fused_)  // one call; without a residual z is y, scaled by 0
    return lib_->check(lib_->convolutionBiasActivationForward(handle_, &one, x_, x, w_, w, conv_, algo_, ws, workspaceBytes_,
                                                              z ? &one : &zero, y_, z ? z : y, bias_, bias, activation_, y_, y),
                       "cudnnConvolutionBiasActivationForward " + c.name);
  KILN_TRY(lib_->check(lib_->convolutionForward(handle_, &one, x_, x, w_, w, conv_, algo_, ws, workspaceBytes_, &zero, y_, y),
                       "cudnnConvolutionForward " + c.name));
  if (bias) KILN_TRY(lib_->check(lib_->addTensor(handle_, &one, bias_, bias, &one, y_, y), "cudnnAddTensor (bias) " + c.name));
  if (z) KILN_TRY(lib_->check(lib_->addTensor(handle_, &one, y_, z, &one, y_, y), "cudnnAddTensor (residual) " + c.name));
  if (c.hasRelu())
    KILN_TRY(lib_->check(lib_->activationForward(handle_, activation_, &one, y_, y, &zero, y_, y),
                         "cudnnActivationForward " + c.name));
  return Status::ok();
}

bool CudnnConvolution::fusable(cudnnConvolutionFwdAlgo_t algo) const {
  // A bias without a ReLU fuses as the IDENTITY activation, which cuDNN runs with one algorithm only.
  return call_->hasBias() && (call_->hasRelu() || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
}

void CudnnConvolution::choose(size_t candidate, bool fused) {
  algo_ = candidates_[candidate].first;
  workspaceBytes_ = candidates_[candidate].second;
  fused_ = fused;
}

Status CudnnConvolution::tryOnce(CUdeviceptr workspace, CUstream stream) {
  // Each algorithm in the heuristic's order, fused (where it can be) then unfused; the first of these is the plan's
  // own choice (create), and the first cuDNN accepts stays.
  std::string first, last;
  for (size_t i = 0; i < candidates_.size(); ++i)
    for (bool fused : {true, false}) {
      if (fused && !fusable(candidates_[i].first)) continue;
      choose(i, fused);
      Status s = enqueue(workspace, stream);
      if (s.isOk()) return s;
      last = s.error().message();
      if (first.empty()) first = last;
    }
  return makeError(ErrorCode::DeviceFailure, "cuDNN refuses ", call_->name, " (", call_->describe(), ") with each of its ",
                   candidates_.size(), " algorithms, fused and not: ", first, "; last: ", last,
                   "; recompile without --library-tactics");
}

}  // namespace kiln::runtime
