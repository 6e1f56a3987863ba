//===- kiln/ir/Op.h - Ops as enum values ------------------------*- C++ -*-===//
//
// ir::Op numbers every op of the op table (kiln/ir/Ops.def). A node's op()
// is its schema's, so passes, code generation and selection identify ops by
// value (a switch, a table indexed by op) instead of by comparing op-type
// strings and domains.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::ir {

enum class Op : uint16_t {
#define KILN_OP(id, domain, name) id,
#include "kiln/ir/Ops.def"
#undef KILN_OP
};

/// How many ops the table has (one past the last Op).
inline constexpr size_t kNumOps = 0
#define KILN_OP(id, domain, name) +1
#include "kiln/ir/Ops.def"
#undef KILN_OP
    ;

/// The Op named `name` in `domain` ("" and "ai.onnx" are the default domain); nullopt when the table has none.
std::optional<Op> findOp(std::string_view domain, std::string_view name);
/// The Op of a qualified name ("Conv", "kiln::Gelu"); nullopt when the table has none.
std::optional<Op> findOp(std::string_view qualifiedName);
/// The op's name qualified by a non-default domain ("Conv", "kiln::Gelu").
std::string_view qualifiedOpName(Op op);

}  // namespace kiln::ir
