//===- kiln/passes/Pipeline.h - Textual pass pipelines ------------*- C++ -*-===//
//
// A pipeline is a comma-separated list of pass names, each optionally with
// options in braces: `fold-constant,fuse-ops{max-depth=8},dead-code-elimination`.
// Parsing checks every name against the registry and every option against the
// pass's specs (name, type), filling in defaults, so a pipeline that parses
// runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/passes/PassInfo.h"

namespace kiln::passes {

struct PipelineEntry {
  const PassInfo* pass = nullptr;
  PassOptions options;
};

/// Parses and validates a pipeline; KE4003 (invalid-argument) with the
/// offending position for syntax errors, unknown passes or bad options.
/// An -O level entry ("O3") expands to that level's passes for `target`
/// (see optLevelPipeline).
Expected<std::vector<PipelineEntry>> parsePipeline(std::string_view text, std::string_view target = {});

/// The passes a precision adds after a pipeline (the CLI's --precision):
/// to-mixed-precision for "f16" and "bf16", none for "f32" and "tf32" (a code
/// generation option); KE4003 for any other name.
Expected<std::vector<PipelineEntry>> precisionPasses(const std::string& precision);

/// The pass with every option at its default.
PipelineEntry withDefaultOptions(const PassInfo& pass);
/// Whether `pass`, with every option at its default, applies to `graph` (as
/// the pass manager asks it: a pass without `applicable` always does).
bool applicableWithDefaults(const PassInfo& pass, const ir::Graph& graph);
/// The passes in order, each with its default options.
std::vector<PipelineEntry> pipelineOf(const std::vector<const PassInfo*>& passes);

/// The canonical text of a pipeline (options that differ from their defaults only).
std::string printPipeline(const std::vector<PipelineEntry>& pipeline);

}  // namespace kiln::passes
