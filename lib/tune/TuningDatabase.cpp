//===- lib/tune/TuningDatabase.cpp - Measured schedules on disk ------------===//
//
// See kiln/tune/TuningDatabase.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/TuningDatabase.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "kiln/runtime/Executable.h"
#include "kiln/support/File.h"
#include "kiln/tune/KernelTiming.h"
#include "kiln/tune/SearchStrategy.h"
#include "ScheduleVerdict.h"

namespace kiln::tune {

using namespace codegen;

namespace {

constexpr const char* kSchema = "kiln-tune/1";

Expected<MeasureStatus> parseStatus(const std::string& s) {
  for (MeasureStatus m : {MeasureStatus::Ok, MeasureStatus::LowerError, MeasureStatus::CompileError,
                          MeasureStatus::WrongOutput, MeasureStatus::RunError})
    if (s == measureStatusName(m)) return m;
  return makeError(ErrorCode::FileFormat, "unknown status '", s, "'");
}

}  // namespace

std::string tuningRecordJson(const TuningRecord& r) {
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.config) config[k] = v;
  nlohmann::ordered_json j{{"schema", kSchema},
                           {"target", r.target},
                           {"device", r.device},
                           {"toolkit", r.toolkit},
                           {"signature", r.signature},
                           {"space_version", r.spaceVersion},
                           {"template", r.templateName},
                           {"description", r.description},
                           {"config", config},
                           {"status", measureStatusName(r.status)},
                           {"ms", r.ms},
                           {"flops", r.flops},
                           {"default", r.isDefault},
                           {"strategy", r.strategy},
                           {"seed", r.seed},
                           {"time", r.time}};
  if (r.anchorMs > 0) j["anchor_ms"] = r.anchorMs;
  if (!r.features.empty()) j["features"] = r.features;
  if (!r.library.empty()) j["library"] = r.library;
  if (!r.libraryVersion.empty()) j["library_version"] = r.libraryVersion;
  return j.dump();
}

Expected<TuningRecord> parseTuningRecord(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return makeError(ErrorCode::FileFormat, "not a JSON object");
  try {
    if (j.value("schema", "") != kSchema)
      return makeError(ErrorCode::FileFormat, "schema is '", j.value("schema", ""), "', expected ", kSchema);
    TuningRecord r;
    r.target = j.at("target").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.toolkit = j.at("toolkit").get<std::string>();
    r.signature = j.at("signature").get<std::string>();
    r.spaceVersion = j.at("space_version").get<std::string>();
    r.templateName = j.value("template", "");
    r.description = j.value("description", "");
    for (const auto& [k, v] : j.at("config").items()) r.config[k] = v.get<int64_t>();
    KILN_ASSIGN(r.status, parseStatus(j.at("status").get<std::string>()));
    r.ms = j.at("ms").get<double>();
    r.flops = j.value("flops", 0.0);
    r.isDefault = j.value("default", false);
    r.strategy = j.value("strategy", "");
    r.seed = j.value("seed", uint64_t(0));
    r.time = j.value("time", "");
    if (j.contains("features")) r.features = j.at("features").get<std::vector<float>>();
    r.library = j.value("library", "");
    if (!r.library.empty() && !runtime::libraryRoutineNamed(r.library))
      return makeError(ErrorCode::FileFormat, "unknown library '", r.library, "' (cuBLASLt or cuDNN)");
    if (!r.library.empty() && !r.config.empty())
      return makeError(ErrorCode::FileFormat, "a ", r.library, " record has a configuration");
    r.libraryVersion = j.value("library_version", "");
    if (!r.libraryVersion.empty() && r.library.empty())
      return makeError(ErrorCode::FileFormat, "library_version '", r.libraryVersion, "' on a record that is not a library call's");
    if (r.status == MeasureStatus::Ok && !(r.ms > 0 && std::isfinite(r.ms)))
      return makeError(ErrorCode::FileFormat, "time ", r.ms, " ms of an ok record is not positive");
    r.anchorMs = j.value("anchor_ms", 0.0);
    if (j.contains("anchor_ms") && !(r.anchorMs > 0 && std::isfinite(r.anchorMs)))
      return makeError(ErrorCode::FileFormat, "anchor time ", r.anchorMs, " ms is not positive");
    return r;
  } catch (const nlohmann::json::exception& e) {
    return makeError(ErrorCode::FileFormat, "missing or mistyped field: ", e.what());
  }
}

Expected<TuningDatabase> TuningDatabase::open(const std::string& path, bool mustExist) {
  TuningDatabase db;
  db.path_ = path;
  if (mustExist && !std::filesystem::exists(path))
    return makeError(ErrorCode::IoError, "tuning database ", path, " does not exist (make one with kiln tune)");
  auto take = [&](const std::string& line, size_t number) -> Status {
    KILN_ASSIGN(TuningRecord r, parseTuningRecord(line));
    r.line = number;
    db.records_.push_back(std::move(r));
    return Status::ok();
  };
  KILN_ASSIGN(db.lines_, readRecordLines(path, take, db.problems_));
  return db;
}

Status TuningDatabase::append(TuningRecord record) {
  KILN_TRY(appendLine(path_, tuningRecordJson(record)));
  record.line = ++lines_;
  records_.push_back(std::move(record));
  return Status::ok();
}

const char* applyStatusName(ApplyStatus s) {
  switch (s) {
    case ApplyStatus::Applied: return "applied";
    case ApplyStatus::KeptDefault: return "kept-default";
    case ApplyStatus::Missing: return "missing";
    case ApplyStatus::Stale: return "stale";
    case ApplyStatus::Library: return "library";
  }
  return "?";
}

size_t TuningApplication::count(ApplyStatus s) const {
  size_t n = 0;
  for (const KernelApplication& k : kernels) n += k.status == s;
  return n;
}

std::string TuningApplication::summary(codegen::LibraryTactics tactics) const {
  std::string library;
  if (size_t n = count(ApplyStatus::Library))
    library = ", " + std::to_string(n) + " library calls (measured faster" +
              (tactics == codegen::LibraryTactics::Off ? "; generated all the same: --library-tactics off)" : ")");
  const size_t unused = size_t(std::count_if(kernels.begin(), kernels.end(), [](const KernelApplication& k) {
    return !k.libraryUnused.empty();
  }));
  if (unused)
    library += ", " + std::to_string(unused) + " kernels' library call records not used (--show-tuning says why)";
  return "tuning db: " + std::to_string(count(ApplyStatus::Applied)) + " kernels applied, " +
         std::to_string(count(ApplyStatus::KeptDefault)) + " kept the default (tuned not faster), " +
         std::to_string(count(ApplyStatus::Missing)) + " missing (default schedule), " +
         std::to_string(count(ApplyStatus::Stale)) + " stale (default schedule)" + library;
}

void TuningApplication::applyTo(codegen::CompileOptions& options) const {
  options.configs = configs;
  options.libraryMeasuredFaster = libraryMeasuredFaster;
}

TuningApplication applyTuningDatabase(const TaskSet& tasks, const TuningDatabase& db, const std::string& target,
                                      const std::string& device, const std::string& toolkit) {
  TuningApplication out;
  std::map<std::string, std::string> librariesHere;  // library -> its version here, looked up once
  for (const TuningTask& task : tasks.tasks) {
    std::vector<const TuningRecord*> generated;  // this key's generated-code records, in file order
    std::map<std::string, std::pair<double, int>> libraryTimes;  // per library
    std::string staleWhy, libraryUnusedWhy;
    std::optional<bool> callable;  // whether a library call computes the task, looked up at its first library record
    for (const TuningRecord& r : db.records()) {
      if (r.signature != task.signature || r.target != target || r.device != device) continue;
      if (r.toolkit != toolkit) {
        staleWhy = "measured with " + r.toolkit + ", this is " + toolkit;
        continue;
      }
      if (r.spaceVersion != task.spaceVersion) {
        staleWhy = "knob space changed since it was measured (version " + r.spaceVersion + ", now " + task.spaceVersion + ")";
        continue;
      }
      if (!r.library.empty()) {
        if (r.status != MeasureStatus::Ok) continue;
        if (!callable) callable = task.hasLibraryCall();
        if (!*callable) {
          libraryUnusedWhy = "no " + r.library + " call computes this kernel";
          continue;
        }
        auto [here, first] = librariesHere.try_emplace(r.library);
        if (first) here->second = installedLibraryVersion(r.library);
        if (!r.libraryVersion.empty() && !here->second.empty() && r.libraryVersion != here->second) {
          libraryUnusedWhy = "measured on " + r.library + " " + r.libraryVersion + ", this machine loads " + here->second;
          continue;
        }
        auto& [sum, n] = libraryTimes[r.library];
        sum += r.ms;
        ++n;
        continue;
      }
      if (!task.space.check(r.config).isOk()) {
        staleWhy = "its configuration is not in the current knob space";
        continue;
      }
      generated.push_back(&r);
    }
    const ScheduleVerdict verdict = scheduleVerdict(generated, task.space.defaultConfig());
    std::string library;  // the fastest library call measured for it
    double libraryMs = 0;
    for (const auto& [name, t] : libraryTimes)
      if (library.empty() || t.first / t.second < libraryMs) library = name, libraryMs = t.first / t.second;
    for (const KernelGroup* g : task.groups) {
      KernelApplication k;
      k.group = g->name();
      k.signature = task.signature;
      k.description = task.description;
      k.library = library;
      k.libraryMs = libraryMs;
      if (library.empty()) k.libraryUnused = libraryUnusedWhy;
      const bool libraryFaster = verdict.measured && !library.empty() && libraryMs < verdict.generatedMs();
      if (verdict.measured && !library.empty()) out.libraryMeasuredFaster[k.group] = libraryFaster;
      if (verdict.measured) {
        k.tunedMs = verdict.tunedMs > 0 ? verdict.tunedMs : verdict.defaultMs;
        k.defaultMs = verdict.defaultMs;
        if (verdict.winner) {  // the kernel's schedule: applied, or kept for when it runs generated after all
          k.config = *verdict.winner;
          out.configs[k.group] = *verdict.winner;
        }
        k.status = libraryFaster    ? ApplyStatus::Library
                   : verdict.winner ? ApplyStatus::Applied
                                    : ApplyStatus::KeptDefault;
      } else {
        k.status = staleWhy.empty() ? ApplyStatus::Missing : ApplyStatus::Stale;
        k.why = staleWhy;
      }
      out.kernels.push_back(std::move(k));
    }
  }
  return out;
}

TransferData transferDataFor(const TuningTask& task, const TuningDatabase& db, const std::string& target,
                             const std::string& device, const std::string& toolkit, size_t width, size_t maxRows) {
  std::map<std::string, std::vector<const TuningRecord*>> bySignature;
  size_t rows = 0;
  const auto& records = db.records();
  for (auto it = records.rbegin(); it != records.rend() && rows < maxRows; ++it) {
    const TuningRecord& r = *it;
    if (r.templateName != task.templateName || r.signature == task.signature || r.target != target ||
        r.device != device || r.toolkit != toolkit || r.status != MeasureStatus::Ok || r.features.size() != width)
      continue;
    bySignature[r.signature].push_back(&r);
    ++rows;
  }
  TransferData t;
  for (const auto& [signature, list] : bySignature) {
    if (list.size() < 2) continue;  // nothing to rank
    double best = std::numeric_limits<double>::infinity();
    for (const TuningRecord* r : list) best = std::min(best, r->ms);
    for (const TuningRecord* r : list) {
      t.x.push_back(r->features);
      t.y.push_back(float(best / r->ms));
    }
    t.groups.push_back(unsigned(list.size()));
  }
  return t;
}

}  // namespace kiln::tune
