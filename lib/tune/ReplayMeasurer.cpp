//===- lib/tune/ReplayMeasurer.cpp - Measurements read from a table --------===//
//
// A measurer that measures nothing: each candidate's result is looked up in
// a tuning database that already holds every configuration of the task
// (typically a `kiln tune --strategy grid` over the whole space). The median
// of the configuration's valid records is its time; a configuration recorded
// only as invalid keeps that status. It is how search strategies are
// compared on one consistent, noise-free oracle with many seeds in seconds
// (bench/tuning.py), and how a strategy is developed without the machine
// the table was measured on. A kernel whose valid records all carry an
// anchor (kiln tune --interleave) is replayed drift-corrected: a
// configuration's time is the median of its time / anchor ratios, scaled by
// the median anchor of all the kernel's records. Target, device and toolkit
// are the table's: the records of its first matching record's key are used,
// others ignored. A configuration the table lacks is an error, never a
// guess.
//
//===----------------------------------------------------------------------===//
#include <map>
#include <set>

#include "kiln/support/Statistics.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::tune {
namespace {

struct Entry {
  std::vector<double> ms;  ///< valid records (with an anchor scale: their time / anchor ratios)
  MeasureStatus failed = MeasureStatus::Ok;  ///< an invalid record's status
  std::string error;
};

class ReplayMeasurer final : public Measurer {
 public:
  ReplayMeasurer(std::string table, std::string target, std::string device, std::string toolkit,
                 std::map<std::string, Entry> entries)
      : table_(std::move(table)), target_(std::move(target)), device_(std::move(device)), toolkit_(std::move(toolkit)),
        entries_(std::move(entries)) {}
  std::string target() const override { return target_; }
  std::string device() const override { return device_; }
  std::string toolkit() const override { return toolkit_; }

  Expected<std::vector<MeasureResult>> measure(const TuningTask& task, const std::vector<codegen::Config>& configs) override {
    std::vector<MeasureResult> out;
    for (const codegen::Config& c : configs) {
      const std::string config = codegen::configToString(c);
      auto it = entries_.find(task.signature + " " + config);
      if (it == entries_.end())
        return makeError(ErrorCode::InvalidArgument, "--replay " + table_ + " has no record of " + config + " for kernel " +
                                                         task.signature + " (" + task.description + ") on " + device_);
      MeasureResult r;
      r.config = c;
      if (it->second.ms.empty()) {
        r.status = it->second.failed;
        r.error = "replayed: " + it->second.error;
      } else {
        r.ms = upperMedian(it->second.ms);
      }
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  std::string table_, target_, device_, toolkit_;
  std::map<std::string, Entry> entries_;  ///< "signature config" -> its records
};

}  // namespace

Expected<std::unique_ptr<Measurer>> createReplayMeasurer(const std::string& table, const TaskSet& tasks,
                                                         const std::string& target) {
  KILN_ASSIGN(TuningDatabase db, TuningDatabase::open(table, true));
  std::set<std::string> signatures;
  for (const TuningTask& t : tasks.tasks) signatures.insert(t.signature);
  const TuningRecord* first = nullptr;
  for (const TuningRecord& r : db.records())
    if (r.target == target && signatures.count(r.signature)) {
      first = &r;
      break;
    }
  if (!first)
    return makeError(ErrorCode::InvalidArgument,
                     "--replay " + table + " has no " + target + " records of the kernels to tune");
  auto sameKey = [&](const TuningRecord& r) {
    return r.target == first->target && r.device == first->device && r.toolkit == first->toolkit;
  };
  // Per kernel whose valid records all carry an anchor: their median anchor (the others replay plain medians).
  std::map<std::string, std::vector<double>> anchors;
  std::set<std::string> unanchored;
  for (const TuningRecord& r : db.records())
    if (sameKey(r) && r.status == MeasureStatus::Ok) {
      if (r.anchorMs > 0) anchors[r.signature].push_back(r.anchorMs);
      else unanchored.insert(r.signature);
    }
  std::map<std::string, double> scale;
  for (const auto& [signature, a] : anchors)
    if (!unanchored.count(signature)) scale[signature] = upperMedian(a);
  std::map<std::string, Entry> entries;
  for (const TuningRecord& r : db.records()) {
    if (!sameKey(r)) continue;
    Entry& e = entries[r.signature + " " + codegen::configToString(r.config)];
    if (r.status == MeasureStatus::Ok) {
      auto s = scale.find(r.signature);
      e.ms.push_back(s == scale.end() ? r.ms : r.ms / r.anchorMs * s->second);
    } else {
      e.failed = r.status, e.error = std::string(measureStatusName(r.status)) + " when the table was measured";
    }
  }
  return std::unique_ptr<Measurer>(
      std::make_unique<ReplayMeasurer>(table, first->target, first->device, first->toolkit, std::move(entries)));
}

}  // namespace kiln::tune
