//===- kiln/evolve/Patch.h - Edits to a graph, as a list -----------*- C++ -*-===//
//
// GEVO-ML's patch representation (shared/seeds/000, section 4.2): an
// individual of `kiln evolve` is a list of edits applied in order to the
// original graph, never a graph of its own, so that crossover recombines
// short lists instead of networks. Three edits:
//
//   delete   a node; each of its results is replaced by a value computed
//            before it
//   copy     a node to just before another node, reading values computed
//            before that place; the copy's result replaces one operand there
//   operand  one operand of a node replaced by a value computed before it
//
// A value whose type does not fit its new place is repaired as the seed's
// 4.1 does, with explicit nodes (PatchRepair.h). Every value an edit reads
// comes before the place that reads it, so edits make no cycle; repairs
// restore the exact type, so no type downstream of an edit changes.
//
// Nodes and values are named by value names, unique in a graph: a node by
// its first result. A copy edit names its copy's first result (further
// results add "_1", "_2", ...), so that a later edit can name the copy
// wherever crossover moves the two. A patch is JSON ("kiln-patch/1").
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/Module.h"
#include "kiln/support/Status.h"

namespace kiln::evolve {

enum class EditKind { Delete, Copy, Operand };

const char* editKindName(EditKind kind);

struct Edit {
  EditKind kind = EditKind::Delete;
  /// Delete: the node removed. Copy: the node copied. Operand: the node
  /// whose operand changes. Each named by its first result.
  std::string node;
  /// Delete: one value per result of the node, read in its place.
  /// Copy: the copy's operands, one per operand of the node ("" where the
  /// node omits an optional one). Operand: the one new value.
  std::vector<std::string> values;
  /// Copy: the node (by its first result) whose operand `input` reads the copy.
  std::string into;
  /// Copy: the name of the copy's first result (free in the graph).
  std::string as;
  /// Copy and Operand: the operand index that changes.
  uint32_t input = 0;

  bool operator==(const Edit&) const = default;
};

using Patch = std::vector<Edit>;

/// The patch as JSON text ({"schema": "kiln-patch/1", "edits": [...]}).
std::string patchToJson(const Patch& patch);
/// Parses patchToJson's text; KE2003 naming the edit that is malformed.
Expected<Patch> patchFromJson(const std::string& text);
Expected<Patch> readPatch(const std::string& path);

/// What applying a patch did, one line per edit ("deleted Conv 'conv3':
/// its users read 'relu2' (sliced)"), and how many nodes each kind added.
struct PatchReport {
  std::vector<std::string> edits;
  int repairNodes = 0;   ///< Slice, Pad, Reshape and Identity nodes the repairs added
  int removedDead = 0;   ///< nodes no output depended on any more, removed
};

/// Applies `patch` to `graph` (a root graph) in order, then removes the
/// nodes no graph output needs. KE2003 naming the edit when an edit does
/// not fit the graph (a name it lacks, an operand index out of range, a
/// value that is not computed before the place it is read, a type no repair
/// reaches); the graph is then partly edited and must be dropped.
Expected<PatchReport> applyPatch(ir::Graph& graph, const Patch& patch);

/// A copy of `module` with `patch` applied: the variant `kiln evolve` measures.
Expected<std::unique_ptr<ir::Module>> patchedModule(const ir::Module& module, const Patch& patch,
                                                    PatchReport* report = nullptr);

}  // namespace kiln::evolve
