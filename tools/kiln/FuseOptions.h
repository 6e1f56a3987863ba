//===- tools/kiln/FuseOptions.h - `kiln fuse` options and modes ------------===//
//
// `kiln fuse` has four modes: search a model's fusion decisions (the
// default), collect a Gibbs-sampling dataset of a model (--collect), train
// the advantage model on datasets (--train), and score an advantage model
// on datasets (--score). Each mode's function takes the parsed options and
// returns the exit code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ModelLoader.h"
#include "kiln/fuse/FusionEvaluator.h"
#include "kiln/fuse/FusionSearch.h"
#include "kiln/fuse/GibbsSampling.h"

namespace kiln::cli {

struct FuseOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::string target = "cpu";
  fuse::SearchOptions search;
  fuse::EvaluatorOptions evaluation;
  std::string from = "default";
  std::string advantageModel;  ///< empty: the model shipped for the target
  std::string output, jsonFile;
  std::string database;              ///< --db: measured partitions kept across runs
  int confirmPairs = 30;
  bool confirmKept = false;          ///< --confirm-kept: every kept configuration against the default, for studies
  bool quiet = false;
  std::string collect;               ///< --collect: the dataset to write
  fuse::GibbsOptions gibbs;
  std::vector<std::string> train;    ///< --train: the datasets to train on
  std::vector<std::string> score;    ///< --score: the datasets to score the advantage model on
};

/// The advantage model guided and ranked search and --score use: --advantage-model, else the one kiln
/// ships for the target (data/advantage/<target>.json).
std::string advantageModelPath(const FuseOptions& o);

/// Imports the model as `kiln compile` does and makes the evaluator on its (seeded or given) inputs.
Expected<std::unique_ptr<fuse::FusionEvaluator>> makeFuseEvaluator(const FuseOptions& o,
                                                                  std::unique_ptr<ir::Module>& module);

/// The configuration --from names when it is a saved plan's file (empty for default and random).
Expected<fuse::Decisions> startDecisions(const FuseOptions& o, fuse::FusionEvaluator& evaluator);

int searchMode(FuseOptions o);
int collectMode(const FuseOptions& o);
int trainMode(const FuseOptions& o);
int scoreMode(const FuseOptions& o);

}  // namespace kiln::cli
