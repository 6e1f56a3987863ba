//===- lib/runtime/core/CpuExecutor.cpp - Running CPU kernel steps --------===//
//
// One run: check inputs (which gives the dynamic dims' values), take an
// arena (64-byte aligned intermediates, sized for the dims' maxima), allocate
// outputs of this run's shapes, resolve every buffer id to a pointer, run the
// steps in order (kernels get their run-time extents after the buffers;
// branch and jump steps skip ahead), copy aliased outputs, return the arena. A host step reads its
// operands as tensors (arena buffers copied, dynamic values shared), and its
// results go to their buffers after a shape check, or are kept as the run's
// dynamic values.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/CpuExecutor.h"

#include <chrono>
#include <cstring>

#include "HostProgram.h"

namespace kiln::runtime {

CpuExecutor::~CpuExecutor() = default;

Expected<std::unique_ptr<CpuExecutor>> CpuExecutor::create(std::shared_ptr<const Executable> exe,
                                                           std::vector<KernelEntry> entries) {
  KILN_TRY(exe->validate());
  if (entries.size() != exe->kernelNames.size())
    return makeError(ErrorCode::ArtifactCorrupt, "executable has ", exe->kernelNames.size(), " kernels but ",
                     entries.size(), " entry points");
  for (size_t i = 0; i < entries.size(); ++i)
    if (!entries[i]) return makeError(ErrorCode::ArtifactCorrupt, "kernel ", exe->kernelNames[i], " has no code");
  std::unique_ptr<CpuExecutor> e(new CpuExecutor);
  for (const HostGraph& h : exe->hostGraphs) {
    KILN_ASSIGN(std::unique_ptr<HostProgram> program, HostProgram::create(h));
    e->hostPrograms_.push_back(std::move(program));
  }
  // 64-byte aligned like every other buffer a kernel reads: a 512-bit load of a 16-byte
  // aligned weight straddles two cache lines.
  for (const Tensor& w : exe->weights)
    e->weights_.push_back(reinterpret_cast<uintptr_t>(w.rawData()) % 64 ? w.clone() : w);
  e->exe_ = std::move(exe);
  e->entries_ = std::move(entries);
  return e;
}

Expected<std::vector<Tensor>> CpuExecutor::run(const std::vector<Tensor>& inputs, std::vector<double>* stepMs,
                                               std::vector<StepTiming>* timeline) const {
  const auto runStart = std::chrono::steady_clock::now();
  const Executable& exe = *exe_;
  KILN_ASSIGN(const SymbolValues symbolValues, exe.checkInputs(inputs));
  std::shared_ptr<Buffer> arena;
  {
    std::lock_guard<std::mutex> lock(arenasMutex_);
    if (!freeArenas_.empty()) {
      arena = std::move(freeArenas_.back());
      freeArenas_.pop_back();
    }
  }
  // 64-byte aligned (Buffer::allocate), as the memory plan's offsets assume: kernels read and write
  // whole cache lines, and a 512-bit access that straddles two lines costs two.
  if (!arena && exe.arenaBytes) arena = Buffer::allocate(exe.arenaBytes);
  struct ArenaReturn {  // the arena goes back to the free list however the run ends
    const CpuExecutor* self;
    std::shared_ptr<Buffer>& arena;
    ~ArenaReturn() {
      if (!arena) return;
      std::lock_guard<std::mutex> lock(self->arenasMutex_);
      self->freeArenas_.push_back(std::move(arena));
    }
  } arenaReturn{this, arena};

  uint8_t* const arenaBase = arena ? arena->mutableData() : nullptr;
  std::vector<Tensor> outputs(exe.outputs.size());
  std::vector<void*> pointers(exe.buffers.size(), nullptr);
  std::vector<Tensor> dynamicValues(exe.hostGraphs.empty() ? 0 : exe.buffers.size());
  std::vector<char> computed(dynamicValues.size(), 0);
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    const BufferSpec& b = exe.buffers[id];
    if (b.dynamic) continue;
    switch (b.kind) {
      case BufferKind::Input: pointers[id] = const_cast<void*>(inputs[b.index].rawData()); break;
      case BufferKind::Weight: pointers[id] = const_cast<void*>(weights_[b.index].rawData()); break;
      case BufferKind::Intermediate: pointers[id] = arenaBase ? arenaBase + b.offset : nullptr; break;
      case BufferKind::Output: {
        KILN_ASSIGN(Dims run, b.runDims(symbolValues));
        outputs[b.index] = Tensor::zeros(b.dtype, std::move(run));
        pointers[id] = outputs[b.index].mutableRawData();
        break;
      }
    }
  }
  // A host step's operand as a tensor.
  auto operand = [&](uint32_t id) -> Expected<Tensor> {
    const BufferSpec& b = exe.buffers[id];
    if (b.dynamic) {
      if (!computed[id])
        return makeError(ErrorCode::Internal, "dynamic value ", b.name, " read before it is computed");
      return dynamicValues[id];
    }
    if (b.kind == BufferKind::Input) return inputs[b.index];
    if (b.kind == BufferKind::Weight) return weights_[b.index];
    return Tensor(b.dtype, b.dims, Buffer::copyOf(pointers[id], b.bytes()));
  };
  std::vector<void*> args;
  if (stepMs) stepMs->resize(exe.steps.size(), 0.0);
  for (size_t s = 0, next = 0; s < exe.steps.size(); s = next) {
    const KernelStep& step = exe.steps[s];
    next = s + 1;
    auto start = std::chrono::steady_clock::now();
    if (step.kind == StepKind::Kernel) {
      args.clear();
      for (uint32_t a : step.args) args.push_back(pointers[a]);
      for (const DimExpr& e : step.extents) {  // validate() bounds each by the kernel's maximum
        KILN_ASSIGN(int64_t v, e.evaluate(symbolValues));
        args.push_back(reinterpret_cast<void*>(intptr_t(v)));
      }
      entries_[step.kernel](args.data());
    } else if (step.kind == StepKind::Branch) {
      if (!conditionHolds(pointers[step.args[0]], exe.buffers[step.args[0]].bytes())) next = step.kernel;
    } else if (step.kind == StepKind::Jump) {
      next = step.kernel;
    } else if (step.kind == StepKind::Copy) {
      std::memcpy(pointers[step.args[1]], pointers[step.args[0]], exe.buffers[step.args[1]].bytes());
    } else {
      const HostGraph& h = exe.hostGraphs[step.kernel];
      std::vector<Tensor> operands;
      for (size_t i = 0; i < h.numInputs; ++i) {
        KILN_ASSIGN(Tensor t, operand(step.args[i]));
        operands.push_back(std::move(t));
      }
      KILN_ASSIGN(std::vector<Tensor> results, hostPrograms_[step.kernel]->run(std::move(operands)));
      for (size_t i = 0; i < h.numOutputs; ++i) {
        uint32_t id = step.args[h.numInputs + i];
        const BufferSpec& b = exe.buffers[id];
        if (!b.accepts(results[i]))
          return makeError(ErrorCode::ExecFailure, "host step ", h.name, " computed ", b.name, " as ",
                           results[i].typeString(), "; the compiled code expects ", dtypeName(b.dtype), " ",
                           dimsToString(b.dims));
        if (b.dynamic) {
          dynamicValues[id] = results[i];
          computed[id] = 1;
          if (b.kind == BufferKind::Output) outputs[b.index] = results[i];
        } else if (b.bytes()) {
          std::memcpy(pointers[id], results[i].rawData(), b.bytes());
        }
      }
    }
    if (stepMs || timeline) {
      using Ms = std::chrono::duration<double, std::milli>;
      const double ms = Ms(std::chrono::steady_clock::now() - start).count();
      if (stepMs) (*stepMs)[s] += ms;
      if (timeline) timeline->push_back({uint32_t(s), Ms(start - runStart).count(), ms});
    }
  }
  for (const BufferSpec& b : exe.buffers) {
    if (b.kind != BufferKind::Output || b.aliasOf < 0) continue;
    if (b.dynamic && computed[size_t(b.aliasOf)]) outputs[b.index] = dynamicValues[size_t(b.aliasOf)];
    else if (b.dynamic) return makeError(ErrorCode::Internal, "output ", b.name, " was never computed");
    else if (outputs[b.index].byteSize())
      std::memcpy(pointers[&b - exe.buffers.data()], pointers[size_t(b.aliasOf)], outputs[b.index].byteSize());
  }
  return outputs;
}

}  // namespace kiln::runtime
