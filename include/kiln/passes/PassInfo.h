//===- kiln/passes/PassInfo.h - What a pass is, as plain data ------*- C++ -*-===//
//
// Every graph pass is described by one PassInfo: its kebab-case name, a one-
// line summary and a description, the architecture classes of the pass-
// selection research it belongs to (BL baseline, RN ResNet, MN MobileNet, SSD,
// BR BERT, AD additional; a pass may have several), the opt level that first
// includes it, the passes it requires, its typed options, `applicable` (true
// only when running it with the given options could change this graph) and
// `run`. Passes are registered explicitly by registerAllPasses()
// (PassRegistry.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::passes {

/// A typed option a pass accepts in a pipeline: `fuse-ops{max-depth=8}`.
struct PassOptionSpec {
  enum class Kind { Int, Bool, String };
  std::string name;
  Kind kind = Kind::Int;
  std::string defaultValue;
  std::string help;
};

/// Option values for one pass invocation, validated against its specs.
class PassOptions {
 public:
  PassOptions() = default;
  explicit PassOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  int64_t getInt(const std::string& name) const;
  bool getBool(const std::string& name) const;
  const std::string& getString(const std::string& name) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;  ///< every option, defaults filled in
};

/// Settings shared by every pass of a run. A pipeline entry runs unless its
/// pass is disabled, or its opt level exceeds `optLevel` and it is not
/// required (TVM's PassContext rule); skipped entries are reported as such.
struct PassContext {
  int optLevel = 3;
  bool verifyEach = false;  ///< verify the IR (types too) after every pass
  std::set<std::string> requiredPasses = {};  ///< run even above optLevel
  std::set<std::string> disabledPasses = {};  ///< never run
};

struct PassInfo {
  std::string name;
  std::string summary;
  std::string description;
  std::vector<std::string> classes;  ///< "BL", "RN", "MN", "SSD", "BR", "AD"
  /// The lowest opt level at which a pass context lets the pass run; the -On
  /// pipelines only contain passes at or below n (a pass may be in none).
  int optLevel = 1;
  std::vector<std::string> requiredPasses;  ///< must run earlier in the same pipeline
  std::vector<PassOptionSpec> options;
  /// Largest relative change of any output the pass may cause, as
  /// max|after - before| / max|before| (0: values are unchanged).
  double tolerance = 0;
  std::function<bool(const ir::Graph&, const PassOptions&)> applicable;  ///< with the options the pass would run with
  std::function<Expected<bool>(ir::Graph&, const PassOptions&, const PassContext&)> run;
};

}  // namespace kiln::passes
