//===- kiln/frontend/onnx/OnnxExporter.h - ONNX model export -------*- C++ -*-===//
//
// Writes a kiln Module back to ONNX (opset 17) such that onnx::checker accepts
// it: root-graph constants become initializers, types become value infos.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/ir/Module.h"
#include "kiln/support/Status.h"

namespace kiln::onnx {

/// Serialized ModelProto of `module`, checked with onnx::checker.
Expected<std::string> exportOnnxBytes(const ir::Module& module);
Status exportOnnxFile(const ir::Module& module, const std::string& path);

}  // namespace kiln::onnx
