//===- lib/tune/CpuMeasurer.cpp - Measuring schedules on this CPU ----------===//
//
// See kiln/tune/Measurer.h. Candidates are lowered one after the other
// (cheap) and JIT-compiled in parallel, one LLVM JIT per candidate. Each is
// then bound to copies of the reference values its group reads (packed
// constants packed, tables as code generation made them, outputs filled with
// NaN bits), run once and checked, and timed with the pool pinned. Timing
// happens after all builds finished, so compiles never overlap a timed run.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>

#include "kiln/codegen/CpuBackend.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/ThreadPool.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::tune {

using namespace codegen;

const char* measureStatusName(MeasureStatus s) {
  switch (s) {
    case MeasureStatus::Ok: return "ok";
    case MeasureStatus::LowerError: return "lower-error";
    case MeasureStatus::CompileError: return "compile-error";
    case MeasureStatus::WrongOutput: return "wrong-output";
    case MeasureStatus::RunError: return "run-error";
  }
  return "?";
}

namespace {

struct Candidate {
  LoweredKernel lowered;
  std::unique_ptr<CpuJit> jit;  ///< owns fn's code
  CpuKernelFn fn = nullptr;
};

class CpuMeasurer final : public Measurer {
 public:
  CpuMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options)
      : reference_(std::move(reference)), options_(options), device_(cpuDeviceName()) {}

  std::string target() const override { return "cpu"; }
  std::string device() const override { return device_; }
  std::string toolkit() const override { return cpuToolkitName(); }

  Expected<std::vector<MeasureResult>> measure(const TuningTask& task, const std::vector<Config>& configs) override {
    const KernelGroup& group = *task.groups.front();
    std::vector<MeasureResult> results(configs.size());
    std::vector<Candidate> built(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) {
      results[i].config = configs[i];
      Stopwatch timer;
      if (Status s = task.space.check(configs[i]); !s.isOk()) {
        fail(results[i], MeasureStatus::LowerError, s.error().message());
        continue;
      }
      Expected<LoweredKernel> lowered = lowerGroup(group, KernelTarget::Cpu, &configs[i]);
      if (!lowered) {
        fail(results[i], MeasureStatus::LowerError, lowered.error().message());
        continue;
      }
      built[i].lowered = std::move(*lowered);
      built[i].lowered.kernel.name = "tune_" + std::to_string(i);
      results[i].buildMs = timer.elapsedMs();
    }
    compileAll(built, results);
    std::optional<PinnedThreads> pin;  // builds are done: nothing else runs while timing
    if (options_.pinThreads) pin.emplace();
    for (size_t i = 0; i < configs.size(); ++i)
      if (results[i].ok()) KILN_TRY(run(group, built[i], results[i]));
    return results;
  }

 private:
  static void fail(MeasureResult& r, MeasureStatus s, std::string why) {
    r.status = s;
    r.error = std::move(why);
  }

  void compileAll(std::vector<Candidate>& built, std::vector<MeasureResult>& results) const {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < built.size();) {
        if (!results[i].ok()) continue;
        Stopwatch timer;
        Expected<std::unique_ptr<CpuJit>> jit = CpuJit::create();
        Expected<std::vector<CpuKernelFn>> fns = jit ? (*jit)->compile({&built[i].lowered.kernel})
                                                     : Expected<std::vector<CpuKernelFn>>(jit.error());
        if (!fns) {
          fail(results[i], MeasureStatus::CompileError, fns.error().message());
          continue;
        }
        built[i].jit = std::move(*jit);
        built[i].fn = fns->front();
        results[i].buildMs += timer.elapsedMs();
      }
    };
    int threads = options_.buildThreads > 0 ? options_.buildThreads : int(std::max(1u, std::thread::hardware_concurrency()));
    threads = int(std::min<size_t>(size_t(threads), built.size()));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
  }

  /// Largest relative error of the written outputs.
  static double maxError(const KernelArguments& b) {
    double worst = 0;
    for (const auto& [a, want] : b.expected) worst = std::max(worst, maxRelativeError(b.tensors[a], *want));
    return worst;
  }

  Status run(const KernelGroup& group, Candidate& c, MeasureResult& r) const {
    Expected<KernelArguments> bound = bindKernelArguments(group, c.lowered, reference_);
    if (!bound) return std::move(bound).error();  // the measurer's bug, not the candidate's
    std::vector<void*> pointers = bound->pointers();
    void* const* args = pointers.data();
    c.fn(args);
    r.maxError = maxError(*bound);
    if (!(r.maxError <= options_.tolerance)) {
      fail(r, MeasureStatus::WrongOutput,
           "largest relative error " + std::to_string(r.maxError) + " > tolerance " + std::to_string(options_.tolerance));
      return Status::ok();
    }
    r.ms = timeKernel([&] { c.fn(args); }, options_);
    return Status::ok();
  }

  std::map<std::string, Tensor> reference_;
  MeasureOptions options_;
  std::string device_;
};

}  // namespace


std::vector<void*> KernelArguments::pointers() {
  std::vector<void*> out;
  for (Tensor& t : tensors) out.push_back(t.mutableRawData());
  return out;
}

Expected<KernelArguments> bindKernelArguments(const KernelGroup& group, const LoweredKernel& lk,
                                              const std::map<std::string, Tensor>& reference) {
  KernelArguments b;
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
        t = Tensor::zeros(ref.dtype(), ref.dims());
        std::memset(t.mutableRawData(), 0xff, t.byteSize());  // NaN bits: a missed store cannot pass
        b.expected.emplace_back(a, &ref);
      } else {
        t = ref.clone();
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
