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

/// The arguments of one kernel run and which of them it must write.
struct BoundArgs {
  std::vector<Tensor> tensors;
  std::vector<void*> pointers;
  std::vector<std::pair<size_t, const Tensor*>> expected;  ///< argument index, reference value
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

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
    PinnedThreads pin;  // builds are done: nothing else runs while timing
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

  const Tensor* valueOf(const ir::Value* v) const {
    auto it = reference_.find(v->name());
    return it == reference_.end() ? nullptr : &it->second;
  }

  Expected<BoundArgs> bind(const KernelGroup& group, const LoweredKernel& lk) const {
    BoundArgs b;
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
        const Tensor* ref = valueOf(v);
        if (!ref) return makeError(ErrorCode::Internal, "tuning ", group.name(), ": no reference value for ", v->name());
        bool output = std::find(group.outputs.begin(), group.outputs.end(), v) != group.outputs.end();
        if (pack) {
          KILN_ASSIGN(t, packConstant(*ref, *pack));
        } else if (output) {
          t = Tensor::zeros(ref->dtype(), ref->dims());
          std::memset(t.mutableRawData(), 0xff, t.byteSize());  // NaN bits: a missed store cannot pass
          b.expected.emplace_back(a, ref);
        } else {
          t = ref->clone();
        }
      }
      if (t.numElements() < param->size && t.byteSize() != 0)
        return makeError(ErrorCode::Internal, "tuning ", group.name(), ": argument ", param->name, " holds ",
                         t.numElements(), " elements, the kernel reads ", param->size);
      b.tensors.push_back(std::move(t));
    }
    for (Tensor& t : b.tensors) b.pointers.push_back(t.mutableRawData());
    return b;
  }

  /// Largest relative error of the written outputs (infinite when NaN-ness
  /// differs): |got - want| / max(1, |want|, rms(want)), so long reductions
  /// in another order are not mistaken for wrong code where values are large.
  static double maxError(const BoundArgs& b) {
    double worst = 0;
    for (const auto& [a, want] : b.expected) {
      std::vector<double> got = b.tensors[a].toDoubles(), ref = want->toDoubles();
      double squares = 0;
      for (double v : ref) squares += std::isfinite(v) ? v * v : 0;
      const double rms = ref.empty() ? 0 : std::sqrt(squares / double(ref.size()));
      for (size_t i = 0; i < ref.size(); ++i) {
        double err = std::fabs(got[i] - ref[i]);
        if (std::isnan(got[i]) != std::isnan(ref[i])) err = INFINITY;
        if (std::isnan(err)) err = 0;
        worst = std::max(worst, err / std::max({1.0, std::fabs(ref[i]), rms}));
      }
    }
    return worst;
  }

  Status run(const KernelGroup& group, Candidate& c, MeasureResult& r) const {
    Expected<BoundArgs> bound = bind(group, c.lowered);
    if (!bound) return std::move(bound).error();  // the measurer's bug, not the candidate's
    void* const* args = bound->pointers.data();
    c.fn(args);
    r.maxError = maxError(*bound);
    if (!(r.maxError <= options_.tolerance)) {
      fail(r, MeasureStatus::WrongOutput,
           "largest relative error " + std::to_string(r.maxError) + " > tolerance " + std::to_string(options_.tolerance));
      return Status::ok();
    }
    for (int w = 0; w < options_.warmup; ++w) c.fn(args);
    Stopwatch once;
    c.fn(args);
    double single = std::max(once.elapsedMs(), 1e-6);
    const int inner = int(std::clamp(std::ceil(options_.minSampleMs / single), 1.0, 1e6));
    std::vector<double> samples;
    for (int s = 0; s < std::max(options_.repeats, 1); ++s) {
      Stopwatch timer;
      for (int k = 0; k < inner; ++k) c.fn(args);
      samples.push_back(timer.elapsedMs() / inner);
    }
    r.ms = median(samples);
    return Status::ok();
  }

  std::map<std::string, Tensor> reference_;
  MeasureOptions options_;
  std::string device_;
};

}  // namespace

std::string cpuDeviceName() {
  Expected<std::unique_ptr<CpuJit>> jit = CpuJit::create();
  return describeMachine().cpu + " (" + (jit ? (*jit)->hostCpu() : std::string("unknown")) + ")";
}

std::string cpuToolkitName() { return std::string("kiln ") + KILN_VERSION + ", LLVM " + llvmVersion(); }

Expected<std::unique_ptr<Measurer>> createCpuMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options) {
  return std::unique_ptr<Measurer>(new CpuMeasurer(std::move(reference), options));
}

}  // namespace kiln::tune
