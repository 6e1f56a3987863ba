//===- lib/runtime/core/CpuExecutor.cpp - Running CPU kernel steps --------===//
//
// One run: check inputs, take an arena (64-byte aligned intermediates),
// allocate outputs, resolve every buffer id to a pointer, call the steps in
// order, copy aliased outputs, return the arena.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/CpuExecutor.h"

#include <chrono>
#include <cstring>

namespace kiln::runtime {

Expected<std::unique_ptr<CpuExecutor>> CpuExecutor::create(std::shared_ptr<const Executable> exe,
                                                           std::vector<KernelEntry> entries) {
  KILN_TRY(exe->validate());
  if (entries.size() != exe->kernelNames.size())
    return makeError(ErrorCode::ArtifactCorrupt, "executable has ", exe->kernelNames.size(), " kernels but ",
                     entries.size(), " entry points");
  for (size_t i = 0; i < entries.size(); ++i)
    if (!entries[i]) return makeError(ErrorCode::ArtifactCorrupt, "kernel ", exe->kernelNames[i], " has no code");
  std::unique_ptr<CpuExecutor> e(new CpuExecutor);
  e->exe_ = std::move(exe);
  e->entries_ = std::move(entries);
  return e;
}

Expected<std::vector<Tensor>> CpuExecutor::run(const std::vector<Tensor>& inputs, std::vector<double>* stepMs) const {
  const Executable& exe = *exe_;
  if (inputs.size() != exe.inputs.size())
    return makeError(ErrorCode::ExecInput, "model takes ", exe.inputs.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BufferSpec& b = exe.buffers[exe.inputs[i]];
    if (inputs[i].dtype() != b.dtype || inputs[i].dims() != b.dims) {
      return makeError(ErrorCode::ExecInput, "input '", b.name, "' must be ", dtypeName(b.dtype), " ", dimsToString(b.dims), ", got ",
                       inputs[i].typeString(), " (the executable was compiled for fixed shapes)");
    }
  }
  std::unique_ptr<uint8_t[]> arena;
  {
    std::lock_guard<std::mutex> lock(arenasMutex_);
    if (!freeArenas_.empty()) {
      arena = std::move(freeArenas_.back());
      freeArenas_.pop_back();
    }
  }
  if (!arena && exe.arenaBytes) arena.reset(new uint8_t[exe.arenaBytes]);

  std::vector<Tensor> outputs(exe.outputs.size());
  std::vector<void*> pointers(exe.buffers.size(), nullptr);
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    const BufferSpec& b = exe.buffers[id];
    switch (b.kind) {
      case BufferKind::Input: pointers[id] = const_cast<void*>(inputs[b.index].rawData()); break;
      case BufferKind::Weight: pointers[id] = const_cast<void*>(exe.weights[b.index].rawData()); break;
      case BufferKind::Intermediate: pointers[id] = arena.get() + b.offset; break;
      case BufferKind::Output:
        outputs[b.index] = Tensor(b.dtype, b.dims, Buffer::allocate(b.bytes()));
        pointers[id] = outputs[b.index].mutableRawData();
        break;
    }
  }
  std::vector<void*> args;
  if (stepMs) stepMs->resize(exe.steps.size(), 0.0);
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const KernelStep& step = exe.steps[s];
    args.clear();
    for (uint32_t a : step.args) args.push_back(pointers[a]);
    auto start = std::chrono::steady_clock::now();
    entries_[step.kernel](args.data());
    if (stepMs) (*stepMs)[s] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  for (const BufferSpec& b : exe.buffers)
    if (b.kind == BufferKind::Output && b.aliasOf >= 0 && b.bytes())
      std::memcpy(pointers[&b - exe.buffers.data()], pointers[size_t(b.aliasOf)], b.bytes());
  if (arena) {
    std::lock_guard<std::mutex> lock(arenasMutex_);
    freeArenas_.push_back(std::move(arena));
  }
  return outputs;
}

}  // namespace kiln::runtime
