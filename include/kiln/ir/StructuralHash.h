//===- kiln/ir/StructuralHash.h - Name-independent IR hashing ----*- C++ -*-===//
//
// A 64-bit hash of a graph's structure: ops, attributes (weights by content),
// types and the dataflow between them, independent of value and node names and
// of the order of independent nodes. Two pipelines that produce the same IR
// get the same hash; dead nodes still count.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ir/Module.h"

namespace kiln::ir {

uint64_t structuralHash(const Graph& graph);
/// Hash as 16 lowercase hex digits.
std::string structuralHashHex(const Graph& graph);

}  // namespace kiln::ir
