//===- kiln/evolve/FrontReport.h - What `kiln evolve` writes ---------*- C++ -*-===//
//
// The Pareto front of a search as a chart (SVG: latency against error, the
// front's training and test errors, the rest of the last generation, and
// the original marked) and as a Markdown table with, for each member, what
// its edits do.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/evolve/Dataset.h"
#include "kiln/evolve/Evolution.h"

namespace kiln::evolve {

/// One member of the front as `kiln evolve` reports it.
struct FrontMember {
  const Individual* individual = nullptr;
  PatchReport edits;          ///< what applying its patch did
  double pairedRatio = 0;     ///< latency over the original's in paired runs (0: not confirmed)
  std::string files;          ///< the member's files, for the table
};

std::string frontChartSvg(const std::string& title, Metric metric, const VariantScore& original,
                          const std::vector<Individual>& population, const std::vector<FrontMember>& front);

std::string frontMarkdown(const std::string& title, Metric metric, const VariantScore& original,
                          const std::vector<FrontMember>& front);

}  // namespace kiln::evolve
