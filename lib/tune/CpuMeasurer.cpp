//===- lib/tune/CpuMeasurer.cpp - Measuring schedules on this CPU ----------===//
//
// See kiln/tune/Measurer.h and StagedMeasurer.h. Candidates are lowered for
// the CPU and JIT-compiled in parallel, one LLVM JIT per candidate; each is
// bound to copies of the reference values its group reads (packed constants
// packed, tables as code generation made them, outputs filled with NaN
// bits), run once and checked, and timed with the kernel pool pinned
// (one candidate after the other, or in interleaved rounds next to the
// default configuration: MeasureOptions::interleave).
// Also here: binding a candidate's arguments, shared by both measurers and
// batch mode.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kiln/codegen/cpu/CpuJit.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/ThreadPool.h"
#include "StagedMeasurer.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::tune {

using namespace codegen;

namespace {

struct Candidate {
  LoweredKernel lowered;
  std::unique_ptr<CpuJit> jit;  ///< owns fn's code
  CpuKernelFn fn = nullptr;
};

class CpuMeasurer final : public StagedMeasurer<Candidate> {
 public:
  CpuMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options)
      : StagedMeasurer(std::move(reference), options), device_(cpuDeviceName()) {}

  std::string target() const override { return "cpu"; }
  std::string device() const override { return device_; }
  std::string toolkit() const override { return cpuToolkitName(); }

 private:
  Status lower(const KernelGroup& group, const Config& config, const std::string& name, Candidate& c) const override {
    KILN_ASSIGN(c.lowered, lowerGroup(group, KernelTarget::Cpu, &config));
    c.lowered.kernel.name = name;
    return Status::ok();
  }

  Status build(Candidate& c) const override {
    KILN_ASSIGN(c.jit, CpuJit::create());
    KILN_ASSIGN(std::vector<CpuKernelFn> fns, c.jit->compile({&c.lowered.kernel}));
    c.fn = fns.front();
    return Status::ok();
  }

  Status runAndTime(Candidate& c, KernelArguments& args, MeasureResult& r) const override {
    std::vector<void*> pointers = args.pointers();
    void* const* p = pointers.data();
    c.fn(p);
    if (outputsMatch(args, r)) r.ms = timeKernel([&] { c.fn(p); }, options_);
    return Status::ok();
  }

  std::function<void()> runner(Candidate& c, KernelArguments& args) const override {
    return [fn = c.fn, pointers = args.pointers()] { fn(pointers.data()); };
  }

  /// Builds are done: nothing else runs while timing, on threads pinned to cores.
  std::shared_ptr<void> beginTiming() const override {
    return options_.pinThreads ? std::make_shared<PinnedThreads>() : nullptr;
  }

  std::string device_;
};

}  // namespace


std::vector<void*> KernelArguments::pointers() {
  std::vector<void*> out;
  for (Tensor& t : tensors) out.push_back(t.mutableRawData());
  for (int64_t e : extents) out.push_back(reinterpret_cast<void*>(intptr_t(e)));  // as the CPU executor passes them
  return out;
}

/// `t` in a tensor of `capacity` elements, its data packed at the start (a
/// kernel over dynamic dims reads a run's tensor so from a buffer sized for the maxima).
Tensor withCapacity(const Tensor& t, int64_t capacity) {
  Tensor out = Tensor::zeros(t.dtype(), {capacity});
  std::memcpy(out.mutableRawData(), t.rawData(), t.byteSize());
  return out;
}

Expected<KernelArguments> bindKernelArguments(const KernelGroup& group, const LoweredKernel& lk,
                                              const std::map<std::string, Tensor>& reference) {
  KernelArguments b;
  // Dynamic dims at their opt values: the reference values were computed on inputs of those dims.
  for (const std::string& symbol : lk.extentSymbols) {
    auto r = group.dimRanges ? group.dimRanges->find(symbol) : ir::DimRanges::const_iterator();
    if (!group.dimRanges || r == group.dimRanges->end())
      return makeError(ErrorCode::Internal, "tuning ", group.name(), ": no range for dynamic dim ", symbol);
    b.extents.push_back(r->second.opt);
  }
  for (size_t a = 0; a < lk.kernel.params.size(); ++a) {
    const codegen::Buffer& param = lk.kernel.params[a];
    const ir::Value* v = lk.args[a];
    const PackSpec* pack = a < lk.packs.size() && !lk.packs[a].kind.empty() ? &lk.packs[a] : nullptr;
    Tensor t;
    if (pack && pack->kind == "table") {
      t = pack->table.clone();
    } else if (!v) {  // a workspace
      t = Tensor::zeros(dtypeOfScalar(param->type), {param->size});
    } else {
      auto it = reference.find(v->name());
      if (it == reference.end()) return makeError(ErrorCode::Internal, "tuning ", group.name(), ": no reference value for ", v->name());
      const Tensor& ref = it->second;
      bool output = std::find(group.outputs.begin(), group.outputs.end(), v) != group.outputs.end();
      if (pack) {
        KILN_ASSIGN(t, packConstant(ref, *pack));
      } else if (output) {
        t = Tensor::zeros(ref.dtype(), ref.numElements() < param->size ? Dims{param->size} : ref.dims());
        std::memset(t.mutableRawData(), 0xff, t.byteSize());  // NaN bits: a missed store cannot pass
        b.expected.emplace_back(a, &ref);
      } else {
        t = ref.numElements() < param->size && !b.extents.empty() ? withCapacity(ref, param->size) : ref.clone();
      }
    }
    if (t.numElements() < param->size && t.byteSize() != 0)
      return makeError(ErrorCode::Internal, "tuning ", group.name(), ": argument ", param->name, " holds ", t.numElements(),
                       " elements, the kernel reads ", param->size);
    b.tensors.push_back(std::move(t));
  }
  return b;
}

std::string cpuToolkitName() { return std::string("kiln ") + KILN_VERSION + ", LLVM " + llvmVersion(); }

Expected<std::unique_ptr<Measurer>> createCpuMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options) {
  return std::unique_ptr<Measurer>(new CpuMeasurer(std::move(reference), options));
}

}  // namespace kiln::tune
