//===- kiln/runtime/StepTrace.h - A run's steps as trace events -*- C++ -*-===//
//
// Runs a CpuExecutor with its timeline and turns that into the events of
// kiln::RunTrace: kernel launches (entry point, bytes of their parameters),
// host steps (name, ops), copies and branches, framed by the run's prologue
// (from the start to the first step) and epilogue (after the last step), so
// that the events cover the run but for the loop's own gaps between steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "kiln/kiln.h"
#include "kiln/runtime/CpuExecutor.h"

namespace kiln::runtime {

/// Runs `executor` once, as CpuExecutor::run does, with every step timed into `trace`.
Expected<std::vector<Tensor>> runTraced(const CpuExecutor& executor, const std::vector<Tensor>& inputs, RunTrace& trace);

}  // namespace kiln::runtime
