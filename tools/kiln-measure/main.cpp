//===- tools/kiln-measure/main.cpp - The lean batch measurer ---------------===//
//
// Measures a directory of candidates that `kiln tune --export-candidates`
// wrote, on the machine it runs on, and writes one kiln-tune/1 record per
// candidate (the manifest's record with status, time, device and date
// filled in) for `kiln tune --import-results`. It links only kiln's runtime
// (object-code loader, thread pool, .npy) and the shared timing rules, not
// the compiler, LLVM or protobuf: what a measuring box or a cluster job
// needs. Each candidate is run once and checked against its expected
// outputs, then timed as the in-process measurer times (kiln/tune/KernelTiming.h).
// CUDA candidates (a cubin per candidate, for the manifest's architecture)
// run on the GPU KILN_CUDA_DEVICE names through the runtime's
// CudaKernelTimer (CUDA events; --flush-l2 for cold caches); the driver is
// loaded at run time, so the tool itself still needs no CUDA library.
// A library call (a CUDA candidate with a "library" entry: a cuBLASLt matmul
// or cuDNN convolution, kiln/tune/LibraryCallJson.h) is planned and timed
// as an artifact's library step runs (the runtime opens the libraries);
// one with a "tail" (a group the compiler splits for the library) runs the
// rest's kernel after it and records the two times added.
// The manifest's copies (configurations with the code of a candidate) are
// recorded with that candidate's result, not measured.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kiln/runtime/CudaKernelTimer.h"
#include "kiln/runtime/ObjectLoader.h"
#include "kiln/support/File.h"
#include "kiln/support/Npy.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/ThreadPool.h"
#include "kiln/tune/KernelTiming.h"
#include "kiln/tune/LibraryCallJson.h"

namespace {

using namespace kiln;
using KernelFn = void (*)(void* const* args);

struct Options {
  std::string dir, out;
  tune::MeasureOptions measure;
  int threads = 0;
  bool quiet = false;
};

using tune::KernelOutcome;
using tune::MeasureStatus;

KernelOutcome runError(std::string why) {
  KernelOutcome out;
  out.status = MeasureStatus::RunError;
  out.error = std::move(why);
  return out;
}

/// A candidate's arguments from its .npy files (read once per run): inputs
/// copied, outputs NaN-filled, each output with the value it must end up holding.
Status loadArguments(const Options& o, const nlohmann::json& c, std::map<std::string, Tensor>& files,
                     std::vector<Tensor>& args, tune::ExpectedOutputs& expected) {
  for (const auto& a : c.at("args")) {
    const std::string file = a.at("file").get<std::string>();
    auto it = files.find(file);
    if (it == files.end()) {
      KILN_ASSIGN(Tensor t, readNpy(o.dir + "/" + file));
      it = files.emplace(file, std::move(t)).first;
    }
    if (a.at("output").get<bool>()) {
      Tensor t = Tensor::zeros(it->second.dtype(), it->second.dims());
      std::memset(t.mutableRawData(), 0xff, t.byteSize());  // NaN bits: a missed store cannot pass
      expected.emplace_back(args.size(), &it->second);
      args.push_back(std::move(t));
    } else {
      args.push_back(it->second.clone());
    }
  }
  return Status::ok();
}

Expected<KernelOutcome> measureCpuCandidate(const Options& o, const nlohmann::json& c, std::map<std::string, Tensor>& files) {
  for (const auto& f : c.at("cpu_features"))
    if (!runtime::hostHasFeature(f.get<std::string>()))
      return runError("this CPU lacks " + f.get<std::string>() + " (export on a machine like this one)");
  KILN_ASSIGN(std::string code, readFile(o.dir + "/" + c.at("object").get<std::string>()));
  KILN_ASSIGN(auto object, runtime::LoadedObject::load(reinterpret_cast<const uint8_t*>(code.data()), code.size()));
  auto fn = reinterpret_cast<KernelFn>(object->symbol(c.at("id").get<std::string>()));
  if (!fn) return makeError(ErrorCode::ArtifactCorrupt, "candidate ", c.at("id").get<std::string>(), ": no entry point");
  std::vector<Tensor> args;
  tune::ExpectedOutputs expected;
  KILN_TRY(loadArguments(o, c, files, args, expected));
  std::vector<void*> pointers;
  for (Tensor& t : args) pointers.push_back(t.mutableRawData());
  fn(pointers.data());
  KernelOutcome out = tune::checkOutputs(args, expected, o.measure.tolerance);
  if (!out.ok()) return out;
  PinnedThreads pin;
  out.ms = tune::timeKernel([&] { fn(pointers.data()); }, o.measure);
  return out;
}

Expected<KernelOutcome> measureCudaCandidate(const Options& o, const nlohmann::json& c, std::map<std::string, Tensor>& files);

/// A library call; with a "tail" (a group the compiler splits), the rest's kernel after it, the times added.
Expected<KernelOutcome> measureLibraryCandidate(const Options& o, const nlohmann::json& c,
                                                std::map<std::string, Tensor>& files) {
  KILN_ASSIGN(runtime::LibraryCall call, tune::parseLibraryCallJson(c.at("library").dump()));
  std::vector<Tensor> args;
  tune::ExpectedOutputs expected;
  KILN_TRY(loadArguments(o, c, files, args, expected));
  KILN_ASSIGN(KernelOutcome head, tune::measureCudaLibraryCall(call, args, expected, o.measure));
  if (!head.ok() || !c.contains("tail")) return head;
  if (!c.at("tail").is_object() || c.at("tail").contains("library"))
    return makeError(ErrorCode::FileFormat, "candidate ", c.at("id").get<std::string>(), ": its tail is not a kernel");
  KILN_ASSIGN(KernelOutcome tail, measureCudaCandidate(o, c.at("tail"), files));
  if (!tail.ok()) tail.error = "the rest after the library call: " + tail.error;
  else tail.ms += head.ms;
  tail.maxError = std::max(tail.maxError, head.maxError);
  return tail;
}

Expected<KernelOutcome> measureCudaCandidate(const Options& o, const nlohmann::json& c, std::map<std::string, Tensor>& files) {
  if (c.contains("library")) return measureLibraryCandidate(o, c, files);
  KILN_ASSIGN(std::string code, readFile(o.dir + "/" + c.at("cubin").get<std::string>()));
  runtime::CudaKernelLaunch launch;
  launch.entry = c.at("id").get<std::string>();
  for (size_t d = 0; d < 3; ++d) {
    launch.grid[d] = c.at("grid").at(d).get<uint32_t>();
    launch.block[d] = c.at("block").at(d).get<uint32_t>();
  }
  std::vector<Tensor> args;
  tune::ExpectedOutputs expected;
  KILN_TRY(loadArguments(o, c, files, args, expected));
  return tune::measureCudaKernel(std::vector<uint8_t>(code.begin(), code.end()), launch, args, expected, o.measure);
}

int run(const Options& o) {
  auto text = readFile(o.dir + "/manifest.json");
  if (!text) {
    std::cerr << "kiln-measure: error: " << text.error().message() << "\n";
    return 1;
  }
  nlohmann::json manifest = nlohmann::json::parse(*text, nullptr, false);
  if (manifest.is_discarded() || manifest.value("schema", "") != "kiln-candidates/1" || !manifest.contains("candidates")) {
    std::cerr << "kiln-measure: error KE4002: " << o.dir << "/manifest.json is not a kiln-candidates/1 manifest\n";
    return 1;
  }
  if (o.threads > 0) ThreadPool::global().setThreads(o.threads);
  const std::string out = o.out.empty() ? o.dir + "/results.jsonl" : o.out;
  const bool cuda = manifest.value("target", "cpu") == "cuda";
  std::string device = tune::cpuDeviceName();
  if (cuda) {  // the GPU must be the architecture the cubins were built for
    auto gpu = runtime::CudaKernelTimer::device();
    if (!gpu) {
      std::cerr << "kiln-measure: error: " << gpu.error().str() << "\n";
      return 1;
    }
    const std::string arch = manifest.value("arch", "");
    if (arch != "sm_" + std::to_string(gpu->second)) {
      std::cerr << "kiln-measure: error KE4003: the candidates are cubins for " << arch << ", this GPU is " << gpu->first
                << " (export them with kiln tune --target cuda:sm_" << gpu->second << ")\n";
      return 1;
    }
    device = gpu->first;
  }
  std::map<std::string, Tensor> files;
  std::map<std::string, nlohmann::ordered_json> results;  ///< candidate id -> its record as written
  size_t n = 0, ok = 0, calls = 0, callsOk = 0;  // calls: library calls among the n
  const size_t total = manifest["candidates"].size();
  for (const auto& c : manifest["candidates"]) {
    ++n;
    Expected<KernelOutcome> m = [&]() -> Expected<KernelOutcome> {
      try {
        return cuda ? measureCudaCandidate(o, c, files) : measureCpuCandidate(o, c, files);
      } catch (const nlohmann::json::exception& e) {
        return makeError(ErrorCode::FileFormat, "malformed candidate entry: ", e.what());
      }
    }();
    if (!m) {
      std::cerr << "kiln-measure: error: candidate " << n << " of " << total << ": " << m.error().message() << "\n";
      return 1;
    }
    nlohmann::ordered_json record = c.at("record");
    record["device"] = device;
    const std::string status = tune::measureStatusName(m->status);
    record["status"] = status;
    record["ms"] = m->ms;
    record["time"] = utcTimestamp();
    if (c.contains("library"))  // the version it ran on: records of another version are set aside when applied
      if (std::string v = tune::installedLibraryVersion(record.value("library", "")); !v.empty()) record["library_version"] = v;
    if (Status s = appendLine(out, record.dump()); !s.isOk()) {
      std::cerr << "kiln-measure: error: " << s.error().message() << "\n";
      return 1;
    }
    results[c.at("id").get<std::string>()] = record;
    ok += m->ok();
    calls += c.contains("library");
    callsOk += c.contains("library") && m->ok();
    if (!o.quiet)
      std::cerr << "kiln-measure: [" << n << "/" << total << "] " << c.at("id").get<std::string>() << " "
                << record.value("description", "") << ": " << (m->ok() ? std::to_string(m->ms) + " ms" : status + " (" + m->error + ")")
                << "\n";
  }
  // Copies: configurations whose code a measured candidate has get its result (strategy "same-code").
  size_t copies = 0;
  for (const auto& c : manifest.value("copies", nlohmann::json::array())) {
    auto same = c.is_object() && c.contains("same_as") && c["same_as"].is_string() && c.contains("record") && c["record"].is_object()
                    ? results.find(c["same_as"].get<std::string>())
                    : results.end();
    if (same == results.end()) {
      std::cerr << "kiln-measure: error KE4002: " << o.dir << "/manifest.json: copy " << copies + 1
                << " does not name a candidate of the manifest (same_as)\n";
      return 1;
    }
    nlohmann::ordered_json record = c["record"];
    for (const char* field : {"device", "status", "ms", "time"}) record[field] = same->second[field];
    if (Status s = appendLine(out, record.dump()); !s.isOk()) {
      std::cerr << "kiln-measure: error: " << s.error().message() << "\n";
      return 1;
    }
    ++copies;
  }
  std::cout << "measured " << n - calls << " candidates (" << ok - callsOk << " valid)";
  if (calls) std::cout << " and " << calls << " library calls (" << callsOk << " valid)";
  std::cout << " on " << device;
  if (copies) std::cout << ", recorded " << copies << " copies (same code as a candidate)";
  std::cout << " -> " << out << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln-measure: measures the candidates `kiln tune --export-candidates DIR` wrote, on this machine,\n"
               "and writes kiln-tune/1 records for `kiln tune --import-results`."};
  Options o;
  app.add_option("dir", o.dir, "Candidate directory (holds manifest.json)")->required()->check(CLI::ExistingDirectory);
  app.add_option("--out", o.out, "Records to append to (default: DIR/results.jsonl)");
  app.add_option("--repeats", o.measure.repeats, "Timed samples per candidate (median)")->default_val(5)->check(CLI::Range(1, 1000));
  app.add_option("--min-sample-ms", o.measure.minSampleMs, "Each sample repeats the kernel for at least this long")->default_val(1.0);
  app.add_option("--tolerance", o.measure.tolerance, "Relative error vs the expected outputs above which a candidate is wrong")
      ->default_val(1e-3);
  app.add_option("--threads", o.threads, "Kernel threads (0: one per core)")->default_val(0);
  app.add_flag("--flush-l2", o.measure.flushL2, "CUDA candidates: evict the GPU's L2 cache before every timed launch");
  app.add_flag("--quiet", o.quiet, "No progress on stderr");
  CLI11_PARSE(app, argc, argv);
  return run(o);
}
