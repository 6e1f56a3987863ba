//===- kiln/tune/BatchMode.h - Measuring candidates elsewhere -----*- C++ -*-===//
//
// Batch mode splits tuning into proposing (here, with the compiler) and
// measuring (anywhere, with the lean kiln-measure tool, which links only
// kiln's runtime): exportCandidates writes a directory holding, per
// candidate, the kernel's object code (CPU) or its cubin and CUDA C (CUDA,
// for one architecture; kiln-measure times it with CUDA events on the GPU
// it finds), its arguments and expected outputs
// as .npy files (shared by content hash) and a manifest (kiln-candidates/1)
// with each candidate's tuning record less its measurement; kiln-measure
// fills in status, time and device and writes kiln-tune/1 lines;
// importResults checks them against the model's tasks and appends them to
// the tuning database. The strategies continue from what the database
// already holds, so rounds of export / measure / import are a tuning run.
// As in the tuner, identical code is measured once: a proposal whose kernel
// IR equals an exported candidate's is written as a copy ("same_as" that
// candidate; kiln-measure records it with that candidate's result, strategy
// "same-code"), and one equal to a configuration the database holds is not
// exported at all. For CUDA each task's library call (cuBLASLt or cuDNN)
// is exported once too, so that kiln-measure times it on the GPU and the
// database can choose between it and the kernels (TuningDatabase.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/support/Tensor.h"
#include "kiln/tune/TuningDatabase.h"
#include "kiln/tune/TuningTask.h"

namespace kiln::tune {

struct ExportOptions {
  std::string dir;
  std::string target = "cpu";  ///< "cpu": object code for this CPU; "cuda": cubins for sm_<sm>
  int sm = 90;
  std::string strategy = "sa-as";
  size_t candidates = 64;  ///< at most this many (defaults not yet measured included)
  size_t batch = 8;        ///< per task and round
  uint64_t seed = 0;
};

struct ExportSummary {
  size_t candidates = 0, tasks = 0, tensorFiles = 0;
  size_t libraryCalls = 0;  ///< CUDA: the tasks' library calls, exported beside the candidates (not in the budget)
  size_t copies = 0;    ///< proposals with the code of an exported candidate (measured once, recorded twice)
  size_t measured = 0;  ///< proposals with the code of a configuration the database holds (not exported)
  uint64_t bytes = 0;
};

/// Proposes and writes candidates of `tasks` (heaviest first by flops x uses);
/// `history` feeds the strategies what was measured before.
Expected<ExportSummary> exportCandidates(const TaskSet& tasks, const std::map<std::string, Tensor>& reference,
                                         const TuningDatabase& history, const ExportOptions& options);

struct ImportSummary {
  size_t imported = 0, skipped = 0;
  std::vector<std::string> problems;  ///< per skipped line: where and why
};
/// Appends the records of `path` that belong to `tasks` to `db`.
Expected<ImportSummary> importResults(const std::string& path, const TaskSet& tasks, TuningDatabase& db);

}  // namespace kiln::tune
