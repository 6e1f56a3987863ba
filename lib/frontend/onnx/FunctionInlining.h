//===- lib/frontend/onnx/FunctionInlining.h - Model-local functions -*- C++ -*-===//
//
// A call of a model-local function (a FunctionProto of ModelProto.functions)
// is imported as its body: the body's nodes with the call's attributes in
// place of attribute references (ref_attr_name, also inside subgraphs; the
// function's defaults where the call gives none), named after the call. The
// importer binds the formal inputs and outputs (OnnxImporter.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

#include "kiln/support/Status.h"

namespace kiln::onnx {

/// The nodes of `f`'s body for the call `call`, attribute references resolved.
Expected<std::vector<::onnx::NodeProto>> instantiateFunctionBody(const ::onnx::FunctionProto& f,
                                                                 const ::onnx::NodeProto& call,
                                                                 const std::string& callName);

}  // namespace kiln::onnx
