//===- kiln/ir/Verifier.h - Structural and type checks of the IR -*- C++ -*-===//
//
// The verifier checks what every pass must preserve: operands defined before
// use (in the graph or an enclosing one), consistent use lists, operand/result
// counts and attributes as the op table says, unique value names, and result
// types that agree with what inference derives from the operands.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

struct VerifyOptions {
  /// Also re-run inference on each node and compare with the recorded types.
  bool checkTypes = true;
};

/// Returns the first violation found (ErrorCode::IrVerify, naming the node).
Status verify(const Graph& graph, const VerifyOptions& options = {});

/// Checks a node's operand count, result count and attributes against its schema
/// (shared by the importer, the text parser and the verifier).
Status checkNodeAgainstSchema(const Node& node);

/// True when `recorded` is an instance of `inferred` or vice versa (dims agree
/// where both are known, ranks agree where both are ranked).
bool typesCompatible(const Type& recorded, const Type& inferred);

}  // namespace kiln::ir
