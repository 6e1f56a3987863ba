//===- kiln/runtime/StepTrace.h - A run's steps as trace events -*- C++ -*-===//
//
// Turns a CpuExecutor timeline into the events of kiln::RunTrace: kernel
// launches (entry point, bytes of their parameters), host steps (name, ops),
// copies and branches, framed by the run's prologue (from the start to the
// first step) and epilogue (after the last step), so that the events cover
// the run but for the loop's own gaps between steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "kiln/kiln.h"
#include "kiln/runtime/CpuExecutor.h"

namespace kiln::runtime {

/// The trace of a run of `exe` that took `runMs` and executed `timeline`.
RunTrace traceOfRun(const Executable& exe, const std::vector<StepTiming>& timeline, double runMs);

}  // namespace kiln::runtime
