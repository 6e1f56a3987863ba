//===- lib/runtime/core/Model.cpp - kiln::Model (the embedding API) --------===//
//
// Loading: read and verify the artifact; for the CPU target, check that this
// CPU has the ISA extensions the code was compiled with, link the object
// code (each part on its own: kernels do not call each other), bind every
// kernel name to its entry point and hand the result to a CpuExecutor; for
// the CUDA target, hand it to a CudaExecutor (which loads the code onto the
// GPU).
//
//===----------------------------------------------------------------------===//
#include "kiln/kiln.h"

#include <map>

#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/CpuExecutor.h"
#include "kiln/runtime/CudaExecutor.h"
#include "kiln/runtime/ObjectLoader.h"
#include "kiln/runtime/StepTrace.h"
#include "kiln/support/ThreadPool.h"

namespace kiln {

struct Model::Impl {
  std::shared_ptr<const runtime::Executable> exe;
  std::vector<std::unique_ptr<runtime::LoadedObject>> code;  ///< the object code's parts, linked
  std::unique_ptr<runtime::CpuExecutor> executor;
  std::unique_ptr<runtime::CudaExecutor> cuda;
  std::vector<TensorInfo> inputs, outputs;
};

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

namespace {

/// What the API reports of a buffer: its dims, with -1 at the dynamic ones,
/// and each dim's range under the executable's dynamic dims.
TensorInfo infoOf(const runtime::BufferSpec& b, const runtime::Executable& exe) {
  TensorInfo t{b.name, b.dtype, b.dims, !b.unknownRank, false, b.dims, b.dims, b.dims};
  std::map<std::string, int64_t> opt;
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  for (const runtime::DimSymbol& d : exe.symbols) opt[d.name] = d.opt, ranges[d.name] = {d.min, d.max};
  for (size_t i = 0; i < b.shape.size(); ++i) {
    if (b.shape[i].constant()) continue;
    t.dims[i] = -1;
    if (auto r = b.shape[i].bounds(ranges)) t.minDims[i] = r->first, t.maxDims[i] = r->second;
    if (auto v = b.shape[i].evaluate(opt)) t.optDims[i] = *v;
  }
  return t;
}

}  // namespace

Expected<std::unique_ptr<Model>> Model::load(const std::string& path) {
  KILN_ASSIGN(runtime::Executable exe, runtime::loadArtifact(path));
  return fromExecutable(std::move(exe), path);
}

Expected<std::unique_ptr<Model>> Model::loadFromMemory(const void* data, size_t size, const std::string& name) {
  auto exe = runtime::deserializeExecutable(static_cast<const uint8_t*>(data), size);
  if (!exe) return Error(exe.error().code(), name + ": " + exe.error().message());
  return fromExecutable(std::move(*exe), name);
}

Expected<std::unique_ptr<Model>> Model::fromExecutable(runtime::Executable exe, const std::string& path) {
  std::unique_ptr<Model> model(new Model);
  Impl& m = *model->impl_;
  for (uint32_t id : exe.inputs) m.inputs.push_back(infoOf(exe.buffers[id], exe));
  for (uint32_t id : exe.outputs) m.outputs.push_back(infoOf(exe.buffers[id], exe));
  for (uint32_t i : exe.stringInputs) m.inputs[i].strings = true;
  for (uint32_t i : exe.stringOutputs) m.outputs[i].strings = true;
  if (exe.target == "cuda") {
    m.exe = std::make_shared<const runtime::Executable>(std::move(exe));
    auto executor = runtime::CudaExecutor::create(m.exe);
    if (!executor) {
      Error e = std::move(executor).error();
      return Error(e.code(), path + ": " + e.message());
    }
    m.cuda = std::move(*executor);
    return model;
  }
  if (exe.target != "cpu")
    return Error(ErrorCode::ArtifactVersion, path + ": compiled for target '" + exe.target + "'; this runtime runs cpu and cuda");
  for (const std::string& f : exe.cpuFeatures)
    if (!runtime::hostHasFeature(f))
      return Error(ErrorCode::ArtifactVersion, path + ": compiled for " + exe.cpu + ", which has " + f +
                                                   "; this CPU does not (recompile on this machine)");
  for (const std::vector<uint8_t>& object : exe.objectCode) {
    KILN_ASSIGN(std::unique_ptr<runtime::LoadedObject> code, runtime::LoadedObject::load(object.data(), object.size()));
    m.code.push_back(std::move(code));
  }
  std::vector<runtime::KernelEntry> entries;
  for (const std::string& name : exe.kernelNames) {
    void* fn = nullptr;
    for (size_t i = 0; i < m.code.size() && !fn; ++i) fn = m.code[i]->symbol(name);
    if (!fn) return Error(ErrorCode::ArtifactCorrupt, path + ": kernel '" + name + "' missing from the object code");
    entries.push_back(reinterpret_cast<runtime::KernelEntry>(fn));
  }
  exe.objectCode.clear();
  exe.objectCode.shrink_to_fit();
  m.exe = std::make_shared<const runtime::Executable>(std::move(exe));
  KILN_ASSIGN(m.executor, runtime::CpuExecutor::create(m.exe, std::move(entries)));
  return model;
}

const std::vector<TensorInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return impl_->outputs; }
const std::string& Model::compiledFor() const { return impl_->exe->cpu; }
uint64_t Model::scratchBytes() const { return impl_->exe->arenaBytes; }

Expected<std::vector<Tensor>> Model::run(const std::vector<Tensor>& inputs) const {
  if (impl_->cuda) return impl_->cuda->run(inputs);
  return impl_->executor->run(inputs);
}

Expected<std::vector<Tensor>> Model::run(const std::vector<Tensor>& inputs, RunTrace& trace) const {
  if (impl_->cuda) return Error(ErrorCode::InvalidArgument, "traces of runs on a GPU are not supported yet; trace a CPU artifact");
  return runtime::runTraced(*impl_->executor, inputs, trace);
}

void Model::setThreads(int threads) { ThreadPool::global().setThreads(threads); }

}  // namespace kiln
