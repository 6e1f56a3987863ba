//===- lib/tune/BatchMode.cpp - Measuring candidates elsewhere -------------===//
//
// See kiln/tune/BatchMode.h. Each candidate is lowered, compiled to a
// relocatable object (the same code an artifact holds) or, for CUDA, printed
// as CUDA C and compiled by NVRTC to a cubin, and bound to its arguments as
// the in-process measurers bind them. A proposal whose code (TaskSpace::
// codeKey) an exported candidate has is listed under "copies" instead.
// For CUDA each task's library call (cuBLASLt, cuDNN), where it has one and
// the database holds no record of it, goes with its first round as a
// candidate of its own (id l0000...: the call as JSON and its operands; not
// counted in the budget); for a group the compiler would split, the call
// for its head and, as "tail", the rest's kernel (cubin and arguments),
// which kiln-measure times after the call, the two times added.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/BatchMode.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "kiln/codegen/cpu/CpuJit.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/support/File.h"
#include "kiln/support/Hash.h"
#include "kiln/support/Npy.h"
#include "kiln/tune/LibraryCallJson.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/ScheduleFeatures.h"
#include "kiln/tune/SearchStrategy.h"

namespace kiln::tune {

using namespace codegen;

namespace {

std::string tensorFileName(const Tensor& t) {
  uint64_t h =
      hashBytes(t.rawData(), t.byteSize(), hashString(std::string(dtypeName(t.dtype())) + dimsToString(t.dims())));
  char buf[32];
  std::snprintf(buf, sizeof buf, "t%016llx.npy", static_cast<unsigned long long>(h));
  return buf;
}

/// Whether `db` holds a record of the task's library call on this toolkit.
bool libraryMeasured(const TuningTask& task, const TuningDatabase& db, const std::string& target,
                     const std::string& toolkit) {
  return std::any_of(db.records().begin(), db.records().end(), [&](const TuningRecord& r) {
    return !r.library.empty() && r.signature == task.signature && r.spaceVersion == task.spaceVersion &&
           r.toolkit == toolkit && r.target == target;
  });
}

/// The task's earlier measurements on this toolkit and knob space, as results for its strategy.
std::vector<MeasureResult> historyOf(const TuningTask& task, const TuningDatabase& db, const std::string& target,
                                     const std::string& toolkit, bool& hasDefault) {
  std::vector<MeasureResult> out;
  hasDefault = false;
  for (const TuningRecord& r : db.records()) {
    if (r.signature != task.signature || r.spaceVersion != task.spaceVersion || r.toolkit != toolkit ||
        r.target != target || !r.library.empty() || !task.space.check(r.config).isOk())
      continue;
    hasDefault |= r.isDefault;
    MeasureResult m;
    m.config = r.config;
    m.status = r.status;
    m.ms = r.ms;
    out.push_back(std::move(m));
  }
  return out;
}

/// A task whose candidates are being proposed.
struct PendingTask {
  const TuningTask* task;
  std::shared_ptr<TaskSpace> space;
  std::unique_ptr<SearchStrategy> strategy;
  bool needsDefault;
  bool needsLibrary;                         ///< CUDA: its library call (if any) is not in the database yet
  std::map<uint64_t, std::string> exported;  ///< code key -> the candidate (id) that measures it
  std::set<uint64_t> held;                   ///< code keys of configurations the database holds
};

/// One export: proposes candidates task by task and writes them and the manifest to options.dir.
class CandidateExporter {
 public:
  CandidateExporter(const std::map<std::string, Tensor>& reference, const ExportOptions& options)
      : reference_(reference),
        options_(options),
        cuda_(options.target == "cuda"),
        toolkit_(cuda_ ? cudaToolkitName() : cpuToolkitName()) {}

  Expected<ExportSummary> run(const TaskSet& tasks, const TuningDatabase& history);

 private:
  Status addPending(const TuningTask* t, const TuningDatabase& history);
  Expected<bool> proposeRound(PendingTask& p, std::set<const TuningTask*>& touched, bool& progress);
  TuningRecord recordOf(const TuningTask& task, const Config& config, bool isDefault, const char* strategy) const;
  Expected<nlohmann::ordered_json> writeArguments(const KernelArguments& args);
  Expected<LoweredKernel> writeCudaKernel(const KernelGroup& group, const Config* config,
                                          nlohmann::ordered_json& entry);
  Status addLibrary(const TuningTask& task);
  Expected<std::string> add(const TuningTask& task, const Config& config, bool isDefault);
  Status propose(PendingTask& p, const Config& config);
  Status writeManifest();

  const std::map<std::string, Tensor>& reference_;
  const ExportOptions& options_;
  const bool cuda_;
  const std::string toolkit_;
  std::vector<PendingTask> pending_;
  ExportSummary summary_;
  nlohmann::ordered_json candidates_ = nlohmann::ordered_json::array(), copies_ = nlohmann::ordered_json::array();
  std::set<std::string> written_;  ///< tensor files written
};

Expected<ExportSummary> CandidateExporter::run(const TaskSet& tasks, const TuningDatabase& history) {
  std::vector<const TuningTask*> order;
  for (const TuningTask& t : tasks.tasks) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TuningTask* a, const TuningTask* b) {
    return a->flops * double(a->groups.size()) > b->flops * double(b->groups.size());
  });
  for (const TuningTask* t : order) KILN_TRY(addPending(t, history));
  std::set<const TuningTask*> touched;
  for (bool progress = true; progress && summary_.candidates < options_.candidates;) {
    progress = false;
    for (PendingTask& p : pending_) {
      if (summary_.candidates >= options_.candidates) break;
      KILN_ASSIGN(bool roomLeft, proposeRound(p, touched, progress));
      if (!roomLeft) break;
    }
  }
  summary_.tasks = touched.size();
  KILN_TRY(writeManifest());
  return summary_;
}

/// The task's strategy, fed what the database holds of it.
Status CandidateExporter::addPending(const TuningTask* t, const TuningDatabase& history) {
  StrategyOptions so;
  so.seed = hashCombine(options_.seed, hashString(t->signature));
  auto space = std::make_shared<TaskSpace>(*t);
  KILN_ASSIGN(std::unique_ptr<SearchStrategy> strategy, makeStrategy(options_.strategy, space, so));
  bool hasDefault = false;
  std::vector<MeasureResult> done = historyOf(*t, history, options_.target, toolkit_, hasDefault);
  if (!done.empty()) KILN_TRY(strategy->update(done));
  PendingTask p{
      t,  space, std::move(strategy), !hasDefault, cuda_ && !libraryMeasured(*t, history, options_.target, toolkit_),
      {}, {}};
  for (const MeasureResult& m : done)
    if (std::optional<uint64_t> key = space->codeKey(space->indexOf(m.config))) p.held.insert(*key);
  pending_.push_back(std::move(p));
  return Status::ok();
}

/// One round of a task: its default and library call when still due, then a batch of its strategy's proposals;
/// false when the budget left no room for the batch.
Expected<bool> CandidateExporter::proposeRound(PendingTask& p, std::set<const TuningTask*>& touched, bool& progress) {
  if (p.needsDefault) {
    const Config def = p.task->space.defaultConfig();
    KILN_ASSIGN(std::string id, add(*p.task, def, true));
    if (std::optional<uint64_t> key = p.space->codeKey(p.space->indexOf(def))) p.exported.emplace(*key, id);
    p.needsDefault = false;
    touched.insert(p.task);
  }
  if (p.needsLibrary) {
    KILN_TRY(addLibrary(*p.task));
    p.needsLibrary = false;
  }
  size_t room = std::min(options_.batch, options_.candidates - summary_.candidates);
  if (!room) return false;
  KILN_ASSIGN(std::vector<Config> next, p.strategy->next(room));
  for (const Config& c : next) KILN_TRY(propose(p, c));
  progress |= !next.empty();
  touched.insert(p.task);
  return true;
}

TuningRecord CandidateExporter::recordOf(const TuningTask& task, const Config& config, bool isDefault,
                                         const char* strategy) const {
  TuningRecord r;
  r.target = options_.target;
  r.toolkit = toolkit_;
  r.signature = task.signature;
  r.spaceVersion = task.spaceVersion;
  r.templateName = task.templateName;
  r.description = task.description;
  r.config = config;
  r.flops = task.flops;
  r.isDefault = isDefault;
  r.strategy = strategy;
  r.seed = options_.seed;
  return r;
}

/// A candidate's arguments as .npy files (each written once, by content) and their list for the manifest.
Expected<nlohmann::ordered_json> CandidateExporter::writeArguments(const KernelArguments& args) {
  nlohmann::ordered_json argList = nlohmann::ordered_json::array();
  for (size_t a = 0; a < args.tensors.size(); ++a) {
    auto expected = std::find_if(args.expected.begin(), args.expected.end(), [&](auto& e) { return e.first == a; });
    const Tensor& data = expected != args.expected.end() ? *expected->second : args.tensors[a];
    std::string file = tensorFileName(data);
    if (written_.insert(file).second) {
      KILN_TRY(writeNpy(options_.dir + "/" + file, data));
      summary_.bytes += data.byteSize();
      ++summary_.tensorFiles;
    }
    argList.push_back({{"file", file}, {"output", expected != args.expected.end()}});
  }
  return argList;
}

/// `group` lowered for the GPU (`config`, or its template's default when null) as the kernel entry["id"] names: its
/// CUDA C and cubin written, their files and its launch put in `entry`.
Expected<LoweredKernel> CandidateExporter::writeCudaKernel(const KernelGroup& group, const Config* config,
                                                           nlohmann::ordered_json& entry) {
  const std::string id = entry.at("id").get<std::string>();
  KILN_ASSIGN(CudaCandidateSource c, cudaCandidate(group, config, id));
  KILN_ASSIGN(CudaBinary binary, compileCubin(c.source.source, id + ".cu", options_.sm));
  KILN_TRY(writeFile(options_.dir + "/" + id + ".cu", c.source.source));
  KILN_TRY(writeFile(options_.dir + "/" + id + ".cubin", std::string(binary.cubin.begin(), binary.cubin.end())));
  summary_.bytes += binary.cubin.size() + c.source.source.size();
  entry["cubin"] = id + ".cubin";
  entry["source"] = id + ".cu";
  entry["param_types"] = c.source.paramTypes;
  entry["grid"] = c.source.grid;
  entry["block"] = c.source.block;
  return std::move(c.lowered);
}

/// The task's library call as a candidate (CUDA), when it has one. A group the compiler would split goes as the
/// call for its head and, under "tail", the rest's kernel (default schedule), measured after it, the times added.
Status CandidateExporter::addLibrary(const TuningTask& task) {
  std::optional<TaskLibraryCall> call = libraryCallOf(task);
  if (!call) return Status::ok();
  LibraryMatch& match = call->match;
  const std::optional<LibrarySplit>& split = call->split;
  const std::string id = "l" + std::to_string(10000 + summary_.libraryCalls).substr(1);
  match.call.name = id;
  nlohmann::ordered_json entry{{"id", id}, {"library", nlohmann::ordered_json::parse(libraryCallJson(match.call))}};
  KILN_ASSIGN(KernelArguments args, bindLibraryArguments(*task.groups.front(), match, reference_));
  KILN_ASSIGN(entry["args"], writeArguments(args));
  if (split) {
    nlohmann::ordered_json tail{{"id", id + "_tail"}};
    KILN_ASSIGN(LoweredKernel lowered, writeCudaKernel(split->tail, nullptr, tail));
    KILN_ASSIGN(KernelArguments tailArgs, bindKernelArguments(split->tail, lowered, reference_));
    KILN_ASSIGN(tail["args"], writeArguments(tailArgs));
    entry["tail"] = std::move(tail);
  }
  TuningRecord r = recordOf(task, {}, false, "library");
  r.library = runtime::libraryName(match.call.routine);
  entry["record"] = nlohmann::ordered_json::parse(tuningRecordJson(r));
  candidates_.push_back(std::move(entry));
  ++summary_.libraryCalls;
  return Status::ok();
}

/// A new candidate: its code (object or cubin) and arguments written, its entry listed.
Expected<std::string> CandidateExporter::add(const TuningTask& task, const Config& config, bool isDefault) {
  const std::string id = "c" + std::to_string(10000 + summary_.candidates).substr(1);
  nlohmann::ordered_json entry{{"id", id}};
  LoweredKernel lowered;
  if (cuda_) {
    KILN_ASSIGN(lowered, writeCudaKernel(*task.groups.front(), &config, entry));
  } else {
    KILN_ASSIGN(lowered, lowerGroup(*task.groups.front(), KernelTarget::Cpu, &config));
    lowered.kernel.name = id;
    KILN_ASSIGN(CpuObject object, compileToObject({&lowered.kernel}));
    KILN_TRY(writeFile(options_.dir + "/" + id + ".o", std::string(object.bytes.begin(), object.bytes.end())));
    summary_.bytes += object.bytes.size();
    entry["object"] = id + ".o";
    entry["cpu_features"] = object.requiredFeatures;
  }
  KILN_ASSIGN(KernelArguments args, bindKernelArguments(*task.groups.front(), lowered, reference_));
  KILN_ASSIGN(entry["args"], writeArguments(args));
  TuningRecord r = recordOf(task, config, isDefault, isDefault ? "default" : options_.strategy.c_str());
  r.features = scheduleFeatures(task.space, config, lowered.kernel);
  entry["record"] = nlohmann::ordered_json::parse(tuningRecordJson(r));
  candidates_.push_back(std::move(entry));
  ++summary_.candidates;
  return id;
}

/// A proposal: a new candidate, a copy of one whose code it shares, or nothing when the database holds its code.
Status CandidateExporter::propose(PendingTask& p, const Config& config) {
  std::optional<uint64_t> key = p.space->codeKey(p.space->indexOf(config));
  if (key && p.held.count(*key)) {
    ++summary_.measured;
    return Status::ok();
  }
  auto same = key ? p.exported.find(*key) : p.exported.end();
  if (same == p.exported.end()) {
    KILN_ASSIGN(std::string id, add(*p.task, config, false));
    if (key) p.exported.emplace(*key, id);
    return Status::ok();
  }
  TuningRecord r = recordOf(*p.task, config, false, "same-code");
  if (const std::vector<float>* f = p.space->features(p.space->indexOf(config))) r.features = *f;
  copies_.push_back({{"same_as", same->second}, {"record", nlohmann::ordered_json::parse(tuningRecordJson(r))}});
  ++summary_.copies;
  return Status::ok();
}

Status CandidateExporter::writeManifest() {
  nlohmann::ordered_json manifest{{"schema", "kiln-candidates/1"},
                                  {"target", options_.target},
                                  {"toolkit", toolkit_},
                                  {"strategy", options_.strategy}};
  if (cuda_) manifest["arch"] = "sm_" + std::to_string(options_.sm);
  manifest["candidates"] = candidates_;
  manifest["copies"] = copies_;
  return writeFile(options_.dir + "/manifest.json", manifest.dump(1) + "\n");
}

}  // namespace

Expected<ExportSummary> exportCandidates(const TaskSet& tasks, const std::map<std::string, Tensor>& reference,
                                         const TuningDatabase& history, const ExportOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return makeError(ErrorCode::IoError, "cannot create ", options.dir, ": ", ec.message());
  if (options.target != "cuda" && options.target != "cpu")
    return makeError(ErrorCode::InvalidArgument, "unknown target '", options.target, "'");
  return CandidateExporter(reference, options).run(tasks, history);
}

Expected<ImportSummary> importResults(const std::string& path, const TaskSet& tasks, TuningDatabase& db) {
  if (!std::filesystem::exists(path)) return makeError(ErrorCode::IoError, "results file ", path, " does not exist");
  std::map<std::string, const TuningTask*> bySignature;
  for (const TuningTask& t : tasks.tasks) bySignature[t.signature] = &t;
  ImportSummary summary;
  Status appended = Status::ok();  // a failed write to the database ends the import
  auto take = [&](const std::string& line, size_t) -> Status {
    if (!appended.isOk()) return Status::ok();
    KILN_ASSIGN(TuningRecord r, parseTuningRecord(line));
    auto it = bySignature.find(r.signature);
    if (it == bySignature.end() || it->second->spaceVersion != r.spaceVersion ||
        !(r.library.empty() ? it->second->space.check(r.config).isOk() : r.config.empty()))
      return makeError(ErrorCode::InvalidArgument, "kernel ", r.signature, " (", r.description,
                       ") is not a kernel of this model with this knob space");
    appended = db.append(std::move(r));
    summary.imported += appended.isOk();
    return Status::ok();
  };
  KILN_TRY(readRecordLines(path, take, summary.problems).status());
  KILN_TRY(appended);
  summary.skipped = summary.problems.size();
  return summary;
}

}  // namespace kiln::tune
