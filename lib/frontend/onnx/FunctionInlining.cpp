//===- lib/frontend/onnx/FunctionInlining.cpp - Model-local functions ------===//
//
// Resolves a function body's attribute references against one call. The
// defaults of a function's attributes (FunctionProto.attribute_proto, field
// 11, newer than the ONNX release kiln builds against) are read from the
// message's unknown fields.
//
//===----------------------------------------------------------------------===//
#include "FunctionInlining.h"

#include <google/protobuf/unknown_field_set.h>

#include <map>

namespace kiln::onnx {
namespace {

using Attributes = std::map<std::string, ::onnx::AttributeProto>;

/// FunctionProto field 11: repeated AttributeProto attribute_proto (the defaults).
constexpr int kAttributeProtoField = 11;

Attributes functionDefaults(const ::onnx::FunctionProto& f) {
  Attributes out;
  const google::protobuf::UnknownFieldSet& unknown = f.GetReflection()->GetUnknownFields(f);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (field.number() != kAttributeProtoField || field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    ::onnx::AttributeProto a;
    if (a.ParseFromString(field.length_delimited()) && !a.name().empty()) out[a.name()] = a;
  }
  return out;
}

Status resolveGraph(::onnx::GraphProto& g, const Attributes& given, int depth);

/// Replaces the node's attribute references by the given attributes; a
/// reference to an attribute the call does not give drops the attribute.
Status resolveNode(::onnx::NodeProto& n, const Attributes& given, int depth) {
  auto* attrs = n.mutable_attribute();
  for (int i = 0; i < attrs->size();) {
    ::onnx::AttributeProto& a = (*attrs)[i];
    if (!a.ref_attr_name().empty()) {
      auto it = given.find(a.ref_attr_name());
      if (it == given.end()) {
        attrs->DeleteSubrange(i, 1);
        continue;
      }
      std::string name = a.name();
      a = it->second;
      a.set_name(name);
    }
    if (a.has_g()) KILN_TRY(resolveGraph(*a.mutable_g(), given, depth + 1));
    for (auto& sg : *a.mutable_graphs()) KILN_TRY(resolveGraph(sg, given, depth + 1));
    ++i;
  }
  return Status::ok();
}

Status resolveGraph(::onnx::GraphProto& g, const Attributes& given, int depth) {
  if (depth > 64) return Error(ErrorCode::OnnxInvalidGraph, "subgraphs in a function body nest deeper than 64");
  for (auto& n : *g.mutable_node()) KILN_TRY(resolveNode(n, given, depth));
  return Status::ok();
}

}  // namespace

Expected<std::vector<::onnx::NodeProto>> instantiateFunctionBody(const ::onnx::FunctionProto& f,
                                                                 const ::onnx::NodeProto& call,
                                                                 const std::string& callName) {
  Attributes given = functionDefaults(f);
  for (const auto& a : call.attribute()) {
    bool declared = given.count(a.name()) != 0;
    for (const auto& name : f.attribute()) declared |= name == a.name();
    if (!declared)
      return Error(ErrorCode::BadAttribute, "function '" + f.name() + "' has no attribute '" + a.name() + "'");
    given[a.name()] = a;
  }
  std::vector<::onnx::NodeProto> body(f.node().begin(), f.node().end());
  for (size_t i = 0; i < body.size(); ++i) {
    ::onnx::NodeProto& n = body[i];
    KILN_TRY(resolveNode(n, given, 0));
    n.set_name(callName + "/" + (n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name()));
  }
  return body;
}

}  // namespace kiln::onnx
