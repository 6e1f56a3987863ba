//===- lib/runtime/core/LibrarySteps.cpp - An executor's library steps ----===//
//
// See LibrarySteps.h.
//
//===----------------------------------------------------------------------===//
#include "LibrarySteps.h"

#include "CublasLt.h"
#include "Cudnn.h"

namespace kiln::runtime {

Expected<std::string> libraryVersion(LibraryRoutine r) {
  size_t v = 0;  // both number their versions major * 10000 + minor * 100 + patch
  if (r == LibraryRoutine::CudnnConv) {
    KILN_ASSIGN(const Cudnn* lib, Cudnn::get());
    v = lib->getVersion();
  } else {
    KILN_ASSIGN(const CublasLt* lib, CublasLt::get());
    v = lib->getVersion();
  }
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

LibrarySteps::~LibrarySteps() {
  plans_.clear();  // descriptors before the handles they were made with
  if (cublasLtHandle_) cublasLt_->destroy(cublasLtHandle_);
  if (cudnnHandle_) cudnn_->destroy(cudnnHandle_);
}

Expected<std::unique_ptr<LibrarySteps>> LibrarySteps::plan(const Executable& exe, const std::vector<CUdeviceptr>& pointers) {
  std::unique_ptr<LibrarySteps> steps(new LibrarySteps);
  LibrarySteps& l = *steps;
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const KernelStep& step = exe.steps[s];
    if (step.kind != StepKind::Library) continue;
    const LibraryCall& call = exe.libraryCalls[step.kernel];
    std::vector<CUdeviceptr> operands;
    for (uint32_t a : step.args) operands.push_back(pointers[a]);
    if (call.routine == LibraryRoutine::CudnnConv) {
      if (!l.cudnn_) {
        KILN_ASSIGN(l.cudnn_, Cudnn::get());
        KILN_TRY(l.cudnn_->check(l.cudnn_->create(&l.cudnnHandle_), "cudnnCreate"));
      }
      KILN_ASSIGN(l.plans_[s], CudnnConvolution::create(*l.cudnn_, l.cudnnHandle_, call, std::move(operands)));
      continue;
    }
    if (!l.cublasLt_) {
      KILN_ASSIGN(l.cublasLt_, CublasLt::get());
      KILN_TRY(l.cublasLt_->check(l.cublasLt_->create(&l.cublasLtHandle_), "cublasLtCreate"));
    }
    KILN_ASSIGN(l.plans_[s], CublasLtMatmul::create(*l.cublasLt_, l.cublasLtHandle_, call, std::move(operands)));
  }
  return steps;
}

Status LibrarySteps::tryEach(CUdeviceptr workspace, CUstream stream) {
  for (auto& [step, plan] : plans_) KILN_TRY(plan->tryOnce(workspace, stream));
  return Status::ok();
}

Status LibrarySteps::enqueue(size_t step, CUdeviceptr workspace, CUstream stream) const {
  auto it = plans_.find(step);
  if (it == plans_.end()) return makeError(ErrorCode::Internal, "step ", step, " is not a planned library step");
  return it->second->enqueue(workspace, stream);
}

}  // namespace kiln::runtime
