//===- kiln/evolve/Variation.h - Mutation and crossover of patches -*- C++ -*-===//
//
// GEVO-ML's variation operators (shared/seeds/000, sections 4.1 and 4.2).
// Mutation appends one random edit, drawn on the graph the patch makes so
// that it names what is there: delete, copy or operand, equally likely.
// Edits touch the model's computation, not its weights or shapes: the
// operands they rewire are tensors of floating type that are not
// constants, and the values they read are drawn among the graph inputs
// and the non-constant values computed before the place, of the same
// element type (half the time only those of
// the same shape, when there are any; the rest repaired, PatchRepair.h).
// A drawn edit that does not apply is drawn again. Crossover is one-point
// messy crossover: both parents' edits concatenated, shuffled and cut at a
// random point into two children.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <random>
#include <utility>

#include "kiln/evolve/Patch.h"

namespace kiln::evolve {

/// One random edit of `variant` (a graph a patch made); nullopt when the
/// draw found nothing to edit.
std::optional<Edit> randomEdit(const ir::Graph& variant, std::mt19937_64& rng);

/// `patch` with one random edit appended such that the whole applies to
/// `original`, after up to `tries` draws; nullopt when `patch` itself does
/// not apply or no draw did.
std::optional<Patch> mutated(const ir::Module& original, const Patch& patch, std::mt19937_64& rng, int tries = 20);

/// One-point messy crossover of `a` and `b`.
std::pair<Patch, Patch> messyCrossover(const Patch& a, const Patch& b, std::mt19937_64& rng);

}  // namespace kiln::evolve
