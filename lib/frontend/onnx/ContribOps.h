//===- lib/frontend/onnx/ContribOps.h - com.microsoft ops at import -*- C++ -*-===//
//
// The ONNX Runtime contrib ops kiln imports, each written as opset-17 ops by
// a handler (ContribOps.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string_view>

#include "NewerOpsetForms.h"

namespace kiln::onnx {

/// The handler that writes (domain, op) as opset-17 ops; null when kiln has none.
FormHandler contribOpHandler(std::string_view domain, std::string_view op);

}  // namespace kiln::onnx
