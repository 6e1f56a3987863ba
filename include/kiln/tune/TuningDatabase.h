//===- kiln/tune/TuningDatabase.h - Measured schedules on disk ----*- C++ -*-===//
//
// The tuning database is a JSON-lines file (schema kiln-tune/1), one record
// per measured configuration, appended atomically (support appendLine) so a
// crash or several tuners never leave half a line. A record is keyed by
// (target, device, toolkit), the kernel signature and the knob space
// version; it holds the configuration, its status and median time, and
// whether it is the template's default (and, measured with interleaved
// timing, the default's time in the same rounds: anchor_ms). Lines that
// are not records are reported with their line number and skipped.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/codegen/Compiler.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningTask.h"

namespace kiln::tune {

struct TuningRecord {
  std::string target, device, toolkit;
  std::string signature, spaceVersion, templateName, description;
  codegen::Config config;
  MeasureStatus status = MeasureStatus::Ok;
  double ms = 0;            ///< median per run (ok records)
  double anchorMs = 0;      ///< the default configuration's time in the same interleaved rounds (0: not interleaved)
  double flops = 0;
  bool isDefault = false;   ///< the template's default configuration
  std::string strategy;     ///< what proposed it ("default": the baseline; "confirm": the final side-by-side re-measurement;
                            ///< "same-code": not measured, the time of a configuration with the same kernel IR)
  uint64_t seed = 0;
  std::string time;         ///< UTC
  std::vector<float> features;  ///< the cost model's features of the configuration (transfer learning)
  std::string library;      ///< a library call's record: "cuBLASLt" or "cuDNN" (config empty); "" for a generated kernel
  std::string libraryVersion;  ///< that library's version where it was measured ("9.1.0"; "" unknown)
  size_t line = 0;          ///< where it was read
};
std::string tuningRecordJson(const TuningRecord& r);
Expected<TuningRecord> parseTuningRecord(const std::string& line);

class TuningDatabase {
 public:
  /// Reads `path` (missing: empty, unless `mustExist`).
  static Expected<TuningDatabase> open(const std::string& path, bool mustExist = false);
  Status append(TuningRecord record);
  const std::string& path() const { return path_; }
  const std::vector<TuningRecord>& records() const { return records_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::string path_;
  size_t lines_ = 0;
  std::vector<TuningRecord> records_;
  std::vector<std::string> problems_;
};

enum class ApplyStatus : uint8_t { Applied, KeptDefault, Missing, Stale, Library };
const char* applyStatusName(ApplyStatus s);

struct KernelApplication {
  std::string group, signature, description;
  ApplyStatus status = ApplyStatus::Missing;
  codegen::Config config;   ///< applied (Applied; Library: the kernel's, where tuned beat the default)
  double tunedMs = 0, defaultMs = 0;  ///< from the records (0: none)
  std::string library;      ///< the library call measured for it ("" if none)
  double libraryMs = 0;     ///< its mean time (0: none)
  std::string why;          ///< stale: what differs
  std::string libraryUnused; ///< why its library call records were set aside (another library version; no call computes it)
};

struct TuningApplication {
  std::map<std::string, codegen::Config> configs;  ///< for CompileOptions::configs
  std::map<std::string, bool> libraryMeasuredFaster;  ///< for CompileOptions::libraryMeasuredFaster
  std::vector<KernelApplication> kernels;          ///< per tunable group
  size_t count(ApplyStatus s) const;
  /// Gives `options` the configurations and the measured library choices.
  void applyTo(codegen::CompileOptions& options) const;
  /// "tuning db: 12 applied, 3 kept default (tuned not faster), 20 missing (default schedule), 1 stale (knob space
  /// changed), 2 library calls (measured faster)" (the last only where there are some; with `tactics` off they say
  /// that they run generated all the same).
  std::string summary(codegen::LibraryTactics tactics = codegen::LibraryTactics::Auto) const;
};

/// What the database gives `tasks` (from extractTasks) on (target, device, toolkit).
/// For each kernel group of a model the records of its key decide (lib/tune/ScheduleVerdict.h): the tuner's
/// side-by-side confirmations of winner and default where there are any (the winner applies only where it was
/// faster there), else the lowest mean time over the valid records (relative to the default's time beside each
/// where all are interleaved), unless the default's is at least as low (the default is kept: tuned code is never
/// slower than untuned); a group whose signature has records only for another knob space version or toolkit is
/// stale, one with none is missing (default schedule). The summary counts each kind once per compilation. A
/// record with a `library` field is the group's library call (cuBLASLt or cuDNN, config empty), measured by kiln
/// tune --target cuda: where its mean beats the generated kernel's best (tuned or default), the group runs as
/// that library call under `auto` (its best tuned configuration is still given, for `--library-tactics off`);
/// where it loses, it stays generated even where `auto`'s heuristic would have taken the library. A library
/// call's record carries the library's version; one measured on another version than the one loaded is set aside
/// (reported, not used), as is one for a kernel no library call computes (a record written by hand).
TuningApplication applyTuningDatabase(const TaskSet& tasks, const TuningDatabase& db, const std::string& target,
                                      const std::string& device, const std::string& toolkit);

/// Rows for transfer learning (SearchStrategy.h): ok records of other
/// kernels of `task`'s template on (target, device, toolkit) whose features
/// have `width` entries, scored within their kernel; at most `maxRows`, newest first.
struct TransferData;
TransferData transferDataFor(const TuningTask& task, const TuningDatabase& db, const std::string& target,
                             const std::string& device, const std::string& toolkit, size_t width, size_t maxRows = 2000);

/// The toolkit strings of CPU and CUDA records: kiln's version and LLVM's
/// or NVRTC's (the CPU device string, cpuDeviceName, is in KernelTiming.h).
std::string cpuToolkitName();
std::string cudaToolkitName();

}  // namespace kiln::tune
