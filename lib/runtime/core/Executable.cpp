//===- lib/runtime/core/Executable.cpp - Executable consistency checks ----===//
//
// validate() is what stands between a loaded artifact and raw pointer
// arithmetic: every id in range, every intermediate inside the arena, every
// weight the size its buffer says, every input and output listed once, and
// every step giving its kernel as many buffers as it has parameters, each at
// least as large as the kernel addresses (and never a dynamic one), every host
// step as many as its graph's inputs and outputs, every library step operands
// of its call's type and exact sizes (the library trusts them), and every
// dim that depends on the dynamic dims within its buffer's capacity or its
// kernel's maximum over their ranges.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/Executable.h"

#include <algorithm>
#include <map>

namespace kiln::runtime {

const char* bufferKindName(BufferKind k) {
  static const char* names[] = {"input", "output", "weight", "intermediate"};
  return names[size_t(k)];
}

const char* stepKindName(StepKind k) {
  static const char* names[] = {"kernel", "host", "library", "branch", "jump", "copy"};
  return size_t(k) < 6 ? names[size_t(k)] : "unknown";
}

bool conditionHolds(const void* data, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  return std::any_of(p, p + bytes, [](uint8_t b) { return b != 0; });
}

const char* libraryEpilogueName(LibraryEpilogue e) {
  static const char* names[] = {"none", "bias", "relu", "bias+relu"};
  return size_t(e) < 4 ? names[size_t(e)] : "unknown";
}

const char* libraryName(LibraryRoutine r) { return r == LibraryRoutine::CudnnConv ? "cuDNN" : "cuBLASLt"; }

std::optional<LibraryRoutine> libraryRoutineNamed(std::string_view name) {
  for (LibraryRoutine r : {LibraryRoutine::CublasLtMatmul, LibraryRoutine::CudnnConv})
    if (name == libraryName(r)) return r;
  return std::nullopt;
}

std::vector<uint64_t> LibraryCall::operandElements() const {
  std::vector<uint64_t> elements;
  if (routine == LibraryRoutine::CudnnConv) {
    const ConvGeometry& g = conv;
    const uint64_t out = uint64_t(batch * g.outChannels * g.outHeight() * g.outWidth());
    elements = {uint64_t(batch * g.channels * g.height * g.width),
                uint64_t(g.outChannels * (g.channels / g.groups) * g.kernelH * g.kernelW)};
    if (hasBias()) elements.push_back(uint64_t(g.outChannels));
    if (residual) elements.push_back(out);
    elements.push_back(out);
    return elements;
  }
  elements = {uint64_t(batch * m * k), uint64_t((batchB ? batch : 1) * k * n)};
  if (hasBias()) elements.push_back(uint64_t(n));
  if (residual) elements.push_back(uint64_t(batch * m * n));
  elements.push_back(uint64_t(batch * m * n));
  return elements;
}

std::string LibraryCall::describe() const {
  auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); };
  std::string epilogueText = libraryEpilogueName(epilogue);
  if (residual) epilogueText = (epilogue == LibraryEpilogue::None ? "" : epilogueText + "+") + "residual";
  if (routine == LibraryRoutine::CudnnConv)
    return std::string(dtypeName(dtype)) + " conv " + std::to_string(batch) + "x" + std::to_string(conv.channels) + "x" +
           pair(conv.height, conv.width) + " -> " + std::to_string(conv.outChannels) + " " + pair(conv.kernelH, conv.kernelW) +
           " s" + pair(conv.strideH, conv.strideW) + " p" + pair(conv.padH, conv.padW) + " d" +
           pair(conv.dilationH, conv.dilationW) + " g" + std::to_string(conv.groups) + " " + epilogueText;
  return std::string(dtypeName(dtype)) + " " + std::to_string(batch) + "x" + pair(m, n) + "x" + std::to_string(k) + " " +
         epilogueText;
}

bool LibraryCall::wellFormed() const {
  const LibraryCall& c = *this;
  if (uint8_t(c.epilogue) > uint8_t(LibraryEpilogue::BiasRelu) || uint8_t(c.routine) > uint8_t(LibraryRoutine::CudnnConv))
    return false;
  if (c.routine == LibraryRoutine::CublasLtMatmul) return c.batch >= 1 && c.m >= 1 && c.n >= 1 && c.k >= 1;
  const ConvGeometry& g = c.conv;
  for (int64_t v : {c.batch, g.channels, g.height, g.width, g.outChannels, g.kernelH, g.kernelW, g.strideH, g.strideW,
                    g.dilationH, g.dilationW, g.groups})
    if (v < 1 || v > (int64_t(1) << 31)) return false;
  return g.padH >= 0 && g.padW >= 0 && g.padH < (int64_t(1) << 31) && g.padW < (int64_t(1) << 31) &&
         g.channels % g.groups == 0 && g.outChannels % g.groups == 0 && g.outHeight() >= 1 && g.outWidth() >= 1;
}

namespace {

/// A library step's operands: CUDA only, in range, static, of the call's
/// type and exactly the sizes its shape implies; the result written only to the arena or an output.
Status validateLibraryStep(const Executable& exe, const KernelStep& s) {
  auto bad = [](auto&&... parts) { return makeError(ErrorCode::ArtifactCorrupt, "executable: ", parts...); };
  if (exe.target != "cuda") return bad("a library step in a ", exe.target, " executable");
  if (s.kernel >= exe.libraryCalls.size()) return bad("step names library call ", s.kernel, " of ", exe.libraryCalls.size());
  const LibraryCall& c = exe.libraryCalls[s.kernel];
  if (!c.wellFormed()) return bad("library call ", c.name, " has a bad shape or epilogue");
  if (c.dtype != DType::F32 && c.dtype != DType::F16 && c.dtype != DType::BF16)
    return bad("library call ", c.name, " is of type ", dtypeName(c.dtype));
  if (s.args.size() != c.numOperands())
    return bad("library call ", c.name, " takes ", c.numOperands(), " buffers, a step gives ", s.args.size());
  std::vector<uint64_t> elements = c.operandElements();
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (s.args[i] >= exe.buffers.size()) return bad("library call ", c.name, " takes buffer ", s.args[i], " of ", exe.buffers.size());
    const BufferSpec& b = exe.buffers[s.args[i]];
    if (b.dynamic || b.dtype != c.dtype || b.bytes() != elements[i] * dtypeSize(c.dtype))
      return bad("library call ", c.name, " takes ", elements[i], " ", dtypeName(c.dtype), " elements as operand ", i,
                 "; buffer ", b.name, " is ", dtypeName(b.dtype), " ", dimsToString(b.dims));
  }
  BufferKind out = exe.buffers[s.args.back()].kind;
  if (out != BufferKind::Intermediate && out != BufferKind::Output)
    return bad("library call ", c.name, " writes ", bufferKindName(out), " buffer ", exe.buffers[s.args.back()].name);
  return Status::ok();
}

/// A branch or jump goes forward to a step in range (or to the end); a branch's condition is one static
/// element; a copy moves a static buffer into an intermediate or output buffer of its size.
Status validateControlStep(const Executable& exe, size_t index) {
  auto bad = [](auto&&... parts) { return makeError(ErrorCode::ArtifactCorrupt, "executable: ", parts...); };
  const KernelStep& s = exe.steps[index];
  const char* kind = stepKindName(s.kind);
  for (uint32_t a : s.args)
    if (a >= exe.buffers.size()) return bad(kind, " step ", index, " takes buffer ", a, " of ", exe.buffers.size());
  if (s.kind == StepKind::Copy) {
    if (s.args.size() != 2) return bad("copy step ", index, " takes ", s.args.size(), " buffers, not 2");
    const BufferSpec& from = exe.buffers[s.args[0]];
    const BufferSpec& to = exe.buffers[s.args[1]];
    if (from.dynamic || to.dynamic || from.bytes() != to.bytes())
      return bad("copy step ", index, " moves ", from.name, " into ", to.name, ", which differ in size");
    if (to.kind != BufferKind::Intermediate && to.kind != BufferKind::Output)
      return bad("copy step ", index, " writes ", bufferKindName(to.kind), " buffer ", to.name);
    return Status::ok();
  }
  if (s.kernel <= index || s.kernel > exe.steps.size())
    return bad(kind, " step ", index, " goes on at step ", s.kernel, "; only later steps (to ", exe.steps.size(), ")");
  if (s.kind == StepKind::Jump && !s.args.empty()) return bad("jump step ", index, " takes buffers");
  if (s.kind == StepKind::Branch) {
    if (s.args.size() != 1) return bad("branch step ", index, " takes ", s.args.size(), " buffers, not its condition");
    const BufferSpec& c = exe.buffers[s.args[0]];
    if (c.dynamic || c.bytes() != dtypeSize(c.dtype)) return bad("branch step ", index, "'s condition ", c.name, " is not one element");
  }
  return Status::ok();
}

/// The dynamic dims: each names a dim of an input whose shape is that
/// symbol, with 0 <= min <= opt <= max; every buffer shape and kernel extent
/// uses only them and stays within its capacity (dims) or the kernel's maximum
/// over their ranges; only kernel steps, inputs, outputs and intermediates
/// have them (host, library and control steps take static buffers).
Status validateDynamicDims(const Executable& exe) {
  auto bad = [](auto&&... parts) { return makeError(ErrorCode::ArtifactCorrupt, "executable: ", parts...); };
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  for (const DimSymbol& d : exe.symbols) {
    if (d.name.empty() || ranges.count(d.name)) return bad("dynamic dim '", d.name, "' is unnamed or declared twice");
    if (d.min < 0 || d.min > d.opt || d.opt > d.max || d.max > (int64_t(1) << 40))
      return bad("dynamic dim '", d.name, "' has range ", d.min, "..", d.max, " (opt ", d.opt, ")");
    if (d.input >= exe.inputs.size() || exe.inputs[d.input] >= exe.buffers.size())
      return bad("dynamic dim '", d.name, "' comes from input ", d.input, " of ", exe.inputs.size());
    const BufferSpec& in = exe.buffers[exe.inputs[d.input]];
    if (d.axis >= in.shape.size() || !(in.shape[d.axis] == DimExpr::symbol(d.name)))
      return bad("dynamic dim '", d.name, "' is not dim ", d.axis, " of input ", in.name);
    ranges[d.name] = {d.min, d.max};
  }
  // `e` (what `where` names) stays in [0, cap] over the ranges.
  auto within = [&](const DimExpr& e, int64_t cap, const std::string& where, const char* limit) -> Status {
    for (const std::string& name : e.symbols())
      if (!ranges.count(name)) return bad(where, " (", e.str(), ") uses dim '", name, "', which is not declared");
    std::optional<std::pair<int64_t, int64_t>> b = e.bounds(ranges);
    if (!b || b->first < 0 || b->second > cap) return bad(where, " (", e.str(), ") exceeds its ", limit, " ", cap);
    return Status::ok();
  };
  for (const BufferSpec& b : exe.buffers) {
    if (b.shape.empty()) continue;
    if (b.dynamic || b.kind == BufferKind::Weight || b.shape.size() != b.dims.size())
      return bad("buffer ", b.name, " has a shape over dynamic dims it cannot have");
    for (size_t i = 0; i < b.shape.size(); ++i)
      KILN_TRY(within(b.shape[i], b.dims[i], "buffer " + b.name + " dim " + std::to_string(i), "capacity"));
    if (b.aliasOf >= 0 && size_t(b.aliasOf) < exe.buffers.size() && exe.buffers[size_t(b.aliasOf)].shape != b.shape)
      return bad("output ", b.name, " aliases a buffer of another shape");
  }
  if (!exe.kernelExtentMax.empty() && exe.kernelExtentMax.size() != exe.kernelNames.size())
    return bad("kernel extent table has the wrong size");
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const KernelStep& step = exe.steps[s];
    if (step.kind != StepKind::Kernel) {
      if (!step.extents.empty()) return bad(stepKindName(step.kind), " step ", s, " passes run-time extents");
      for (uint32_t a : step.args)
        if (a < exe.buffers.size() && !exe.buffers[a].shape.empty())
          return bad(stepKindName(step.kind), " step ", s, " takes buffer ", exe.buffers[a].name,
                     ", whose shape depends on dynamic dims");
      continue;
    }
    if (step.kernel >= exe.kernelNames.size()) continue;  // validate() reports it
    static const std::vector<int64_t> kNone;
    const std::vector<int64_t>& max = exe.kernelExtentMax.empty() ? kNone : exe.kernelExtentMax[step.kernel];
    if (step.extents.size() != max.size())
      return bad("kernel ", exe.kernelNames[step.kernel], " takes ", max.size(), " run-time extents, a step gives ",
                 step.extents.size());
    for (size_t i = 0; i < max.size(); ++i)
      KILN_TRY(within(step.extents[i], max[i], "kernel " + exe.kernelNames[step.kernel] + " extent " + std::to_string(i),
                      "maximum"));
  }
  return Status::ok();
}

}  // namespace

uint64_t BufferSpec::bytes() const {
  if (dynamic) return 0;
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : dims) n *= uint64_t(d);
  return n;
}

bool BufferSpec::accepts(const Tensor& t) const {
  if (t.dtype() != dtype) return false;
  if (unknownRank) return true;
  if (t.dims().size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] >= 0 && dims[i] != t.dims()[i]) return false;
  return true;
}

Expected<Dims> BufferSpec::runDims(const SymbolValues& values) const {
  if (shape.empty()) return dims;
  Dims out;
  for (const DimExpr& d : shape) {
    KILN_ASSIGN(int64_t v, d.evaluate(values));
    out.push_back(v);
  }
  return out;
}

namespace {

/// "[seq,768]": a buffer's dims as the dynamic dims give them.
std::string shapeText(const BufferSpec& b) {
  if (b.shape.empty()) return dimsToString(b.dims);
  std::string out = "[";
  for (size_t i = 0; i < b.shape.size(); ++i) out += (i ? "," : "") + b.shape[i].str();
  return out + "]";
}

}  // namespace

Expected<SymbolValues> Executable::checkInputs(const std::vector<Tensor>& values) const {
  if (values.size() != inputs.size())
    return makeError(ErrorCode::ExecInput, "model takes ", inputs.size(), " inputs, got ", values.size());
  SymbolValues run;
  for (const DimSymbol& d : symbols) {
    const Tensor& t = values[d.input];
    const BufferSpec& b = buffers[inputs[d.input]];
    if (t.dims().size() != b.dims.size())
      return makeError(ErrorCode::ExecInput, "input '", b.name, "' must be ", dtypeName(b.dtype), " ", shapeText(b),
                       ", got ", t.typeString());
    const int64_t v = t.dims()[d.axis];
    if (v < d.min || v > d.max)
      return makeError(ErrorCode::ExecInput, "input '", b.name, "' dim ", d.axis, " ('", d.name, "') is ", v,
                       "; this executable serves ", d.min, "..", d.max);
    run[d.name] = v;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const BufferSpec& b = buffers[inputs[i]];
    KILN_ASSIGN(Dims want, b.runDims(run));
    if (values[i].dtype() == b.dtype && values[i].dims() == want) continue;
    if (b.shape.empty())
      return makeError(ErrorCode::ExecInput, "input '", b.name, "' must be ", dtypeName(b.dtype), " ", dimsToString(b.dims),
                       ", got ", values[i].typeString(), " (the executable was compiled for fixed shapes)");
    return makeError(ErrorCode::ExecInput, "input '", b.name, "' must be ", dtypeName(b.dtype), " ", shapeText(b), " = ",
                     dimsToString(want), " in this run, got ", values[i].typeString());
  }
  return run;
}

uint64_t Executable::objectCodeBytes() const {
  uint64_t bytes = 0;
  for (const std::vector<uint8_t>& object : objectCode) bytes += object.size();
  return bytes;
}

Status Executable::validate() const {
  auto bad = [](auto&&... parts) { return makeError(ErrorCode::ArtifactCorrupt, "executable: ", parts...); };
  std::vector<int> inputSeen(inputs.size()), outputSeen(outputs.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferSpec& b = buffers[i];
    for (int64_t d : b.dims)
      if (d < (b.dynamic ? -1 : 0) || d > (int64_t(1) << 40)) return bad("buffer ", b.name, " has dim ", d);
    if (b.dynamic && b.kind != BufferKind::Intermediate && b.kind != BufferKind::Output)
      return bad(bufferKindName(b.kind), " buffer ", b.name, " cannot be dynamic");
    if (b.unknownRank && (!b.dynamic || !b.dims.empty())) return bad("buffer ", b.name, " of unknown rank is not dynamic");
    if (dtypeSize(b.dtype) == 0) return bad("buffer ", b.name, " has no storable dtype");
    switch (b.kind) {
      case BufferKind::Input:
        if (b.index >= inputs.size() || inputs[b.index] != i) return bad("input buffer ", b.name, " is not listed");
        break;
      case BufferKind::Output:
        if (b.index >= outputs.size() || outputs[b.index] != i) return bad("output buffer ", b.name, " is not listed");
        if (b.aliasOf >= 0 && (size_t(b.aliasOf) >= buffers.size() || buffers[size_t(b.aliasOf)].bytes() != b.bytes() ||
                               buffers[size_t(b.aliasOf)].dynamic != b.dynamic))
          return bad("output ", b.name, " aliases a bad buffer");
        break;
      case BufferKind::Weight:
        if (b.index >= weights.size() || weights[b.index].byteSize() != b.bytes())
          return bad("weight buffer ", b.name, " does not match its tensor");
        break;
      case BufferKind::Intermediate:
        if (b.offset > arenaBytes || b.bytes() > arenaBytes - b.offset)
          return bad("intermediate ", b.name, " lies outside the arena");
        break;
    }
  }
  for (uint32_t id : inputs)
    if (id >= buffers.size() || buffers[id].kind != BufferKind::Input) return bad("input id ", id, " is not an input buffer");
  for (uint32_t id : outputs)
    if (id >= buffers.size() || buffers[id].kind != BufferKind::Output) return bad("output id ", id, " is not an output buffer");
  if (kernelParamBytes.size() != kernelNames.size()) return bad("kernel parameter table has the wrong size");
  if (target != "cpu" && target != "cuda") return bad("unknown target '", target, "'");
  // An empty table is a CUDA executable still being built (code comes after lowering); CudaExecutor refuses it.
  if (target == "cuda" && !cudaKernels.empty() && cudaKernels.size() != kernelNames.size())
    return bad("CUDA kernel table has the wrong size");
  if (target == "cpu" && !cudaKernels.empty()) return bad("a CPU executable holds CUDA kernels");
  for (size_t k = 0; k < cudaKernels.size(); ++k) {
    const CudaKernelCode& c = cudaKernels[k];
    uint64_t threads = uint64_t(c.block[0]) * c.block[1] * c.block[2];
    if (threads == 0 || threads > 1024 || !c.grid[0] || !c.grid[1] || !c.grid[2])
      return bad("CUDA kernel ", kernelNames[k], " has a bad launch shape");
    if (c.cubins.size() != c.cubinArchs.size() || (c.cubins.empty() && c.ptx.empty()))
      return bad("CUDA kernel ", kernelNames[k], " has no code");
  }
  KILN_TRY(validateDynamicDims(*this));
  for (const KernelStep& s : steps) {
    if (s.kind == StepKind::Host) {
      if (s.kernel >= hostGraphs.size()) return bad("step names host graph ", s.kernel, " of ", hostGraphs.size());
      const HostGraph& h = hostGraphs[s.kernel];
      if (s.args.size() != size_t(h.numInputs) + h.numOutputs)
        return bad("host graph ", h.name, " takes ", h.numInputs, "+", h.numOutputs, " buffers, a step gives ", s.args.size());
      for (size_t i = 0; i < s.args.size(); ++i) {
        if (s.args[i] >= buffers.size()) return bad("host graph ", h.name, " takes buffer ", s.args[i], " of ", buffers.size());
        BufferKind k = buffers[s.args[i]].kind;
        if (i >= h.numInputs && k != BufferKind::Intermediate && k != BufferKind::Output)
          return bad("host graph ", h.name, " writes ", bufferKindName(k), " buffer ", buffers[s.args[i]].name);
      }
      continue;
    }
    if (s.kind == StepKind::Library) {
      KILN_TRY(validateLibraryStep(*this, s));
      continue;
    }
    if (s.kind == StepKind::Branch || s.kind == StepKind::Jump || s.kind == StepKind::Copy) {
      KILN_TRY(validateControlStep(*this, size_t(&s - steps.data())));
      continue;
    }
    if (s.kind != StepKind::Kernel) return bad("step of unknown kind ", int(s.kind));
    if (s.kernel >= kernelNames.size()) return bad("step names kernel ", s.kernel, " of ", kernelNames.size());
    const std::vector<uint64_t>& params = kernelParamBytes[s.kernel];
    if (s.args.size() != params.size())
      return bad("kernel ", kernelNames[s.kernel], " takes ", params.size(), " buffers, a step gives ", s.args.size());
    for (size_t i = 0; i < s.args.size(); ++i) {
      uint32_t a = s.args[i];
      if (a >= buffers.size()) return bad("kernel ", kernelNames[s.kernel], " takes buffer ", a, " of ", buffers.size());
      if (buffers[a].dynamic) return bad("kernel ", kernelNames[s.kernel], " takes dynamic buffer ", buffers[a].name);
      if (buffers[a].bytes() < params[i])
        return bad("kernel ", kernelNames[s.kernel], " addresses ", params[i], " bytes of buffer ", buffers[a].name,
                   " (", buffers[a].bytes(), ")");
    }
  }
  return Status::ok();
}

}  // namespace kiln::runtime
