//===- lib/codegen/NarrowCastExpr.h - kiln::NarrowCast as an expression -*- C++ -*-===//
//
// The element formula of kiln::NarrowCast: ONNX Cast to a narrow type (float8,
// float4, 4- or 2-bit integer), as a value of its carrier (f32, u8 or i8). It computes what
// kiln/support/NarrowTypes.h's rules do, in kernel IR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/codegen/KernelIR.h"
#include "kiln/support/NarrowTypes.h"

namespace kiln::codegen {

/// The carrier value of `x` (a loaded element, in its compute type) cast to `to`.
Expr narrowCastExpr(const Expr& x, NarrowType to, bool saturate, ScaleRounding rounding);

}  // namespace kiln::codegen
