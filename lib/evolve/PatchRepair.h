//===- lib/evolve/PatchRepair.h - A value made to fit another place -*- C++ -*-===//
//
// GEVO-ML's repair (shared/seeds/000, section 4.1): when an edit reads a
// value whose shape is not the one its new place needs, the value is
// reshaped to the needed rank (leading axes of size 1 added, or surplus
// leading axes cut to their first element and dropped), sliced from the
// start of each axis that is too long and padded with 1 at the end of each
// axis that is too short. Each step is an explicit node before the place,
// so a patched model is an ordinary graph. Private to lib/evolve.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::evolve {

struct Repaired {
  ir::Value* value = nullptr;
  /// The ops that made it ("Slice, Pad"); empty when the value fit as it was.
  std::string how;
  int nodes = 0;  ///< nodes added, constants included
};

/// `value` as a value of type `target`, made by nodes inserted before
/// `before` and named after the edit at `editIndex` of its patch. Both
/// types must be static tensors of one element type (KE2003 otherwise).
Expected<Repaired> repairToType(ir::Value* value, const ir::TensorType& target, ir::Node* before,
                                size_t editIndex);

/// True for a value a repair made: mutation never names one, since its
/// name depends on the nodes around it.
bool isRepairValue(const ir::Value& value);

}  // namespace kiln::evolve
