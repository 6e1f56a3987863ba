//===- lib/frontend/onnx/OnnxExporter.cpp - kiln Module -> ONNX ModelProto -===//
//
// Writes the IR in opset 17: root-graph Constant nodes become initializers,
// every typed value gets a value_info, subgraphs are written recursively. The
// result is validated with onnx::checker before it is returned.
//
//===----------------------------------------------------------------------===//
#include "kiln/frontend/onnx/OnnxExporter.h"

#include <onnx/checker.h>

#include "OnnxProtoUtils.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::onnx {
namespace {

class Exporter {
 public:
  Status graph(const ir::Graph& g, ::onnx::GraphProto* gp, bool root) {
    gp->set_name(g.name().empty() ? "graph" : g.name());
    for (ir::Value* io : g.inputs()) KILN_TRY(requireRank(io, "input"));
    for (ir::Value* io : g.outputs()) KILN_TRY(requireRank(io, "output"));
    for (ir::Value* in : g.inputs()) valueInfo(in, gp->add_input());
    for (ir::Node* n : g.nodes()) {
      if (root && n->op() == ir::Op::Constant) {
        auto* init = gp->add_initializer();
        init->set_name(n->output(0)->name());
        tensorToProto(n->getTensor("value"), init);
        continue;
      }
      KILN_TRY(node(*n, gp->add_node()));
      for (ir::Value* v : n->outputs())
        if (v->hasUses() && !isGraphOutput(v, g) && hasRanks(v->type())) valueInfo(v, gp->add_value_info());
    }
    for (ir::Value* out : g.outputs()) valueInfo(out, gp->add_output());
    return Status::ok();
  }

  bool usesTrainingDomain() const { return trainingDomain_; }
  bool usesKilnDomain() const { return kilnDomain_; }

 private:
  /// ONNX value infos of tensors need a shape (the rank at least); sequence and
  /// optional elements may leave it out.
  static bool hasRanks(const ir::Type& t) { return !t.isTensor() || t.tensor().hasRank(); }

  static Status requireRank(const ir::Value* v, const char* what) {
    if (hasRanks(v->type())) return Status::ok();
    return Error(ErrorCode::InvalidArgument, std::string("cannot export: graph ") + what + " '" + v->name() +
                                                 "' has unknown rank (" + v->type().str() + "), which ONNX cannot declare");
  }

  static bool isGraphOutput(const ir::Value* v, const ir::Graph& g) {
    for (ir::Value* o : g.outputs())
      if (o == v) return true;
    return false;
  }

  void valueInfo(const ir::Value* v, ::onnx::ValueInfoProto* vi) {
    vi->set_name(v->name());
    typeToProto(v->type(), vi->mutable_type());
  }

  Status node(const ir::Node& n, ::onnx::NodeProto* np) {
    np->set_op_type(n.opType());
    if (!n.domain().empty()) {
      np->set_domain(n.domain());
      trainingDomain_ |= n.domain() == "ai.onnx.preview.training";
      kilnDomain_ |= n.domain() == "kiln";
    }
    if (!n.name().empty()) np->set_name(n.name());
    for (ir::Value* in : n.inputs()) np->add_input(in ? in->name() : "");
    for (ir::Value* out : n.outputs()) np->add_output(out->name());
    for (const auto& [name, a] : n.attributes()) KILN_TRY(attribute(name, a, np->add_attribute()));
    return Status::ok();
  }

  Status attribute(const std::string& name, const ir::Attribute& a, ::onnx::AttributeProto* ap) {
    using AP = ::onnx::AttributeProto;
    ap->set_name(name);
    switch (a.kind()) {
      case ir::AttrKind::Int: ap->set_type(AP::INT); ap->set_i(a.i()); break;
      case ir::AttrKind::Float: ap->set_type(AP::FLOAT); ap->set_f(a.f()); break;
      case ir::AttrKind::String: ap->set_type(AP::STRING); ap->set_s(a.s()); break;
      case ir::AttrKind::Tensor: ap->set_type(AP::TENSOR); tensorToProto(a.t(), ap->mutable_t()); break;
      case ir::AttrKind::Graph:
        ap->set_type(AP::GRAPH);
        KILN_TRY(graph(*a.g(), ap->mutable_g(), false));
        break;
      case ir::AttrKind::Ints:
        ap->set_type(AP::INTS);
        for (int64_t v : a.ints()) ap->add_ints(v);
        break;
      case ir::AttrKind::Floats:
        ap->set_type(AP::FLOATS);
        for (float v : a.floats()) ap->add_floats(v);
        break;
      case ir::AttrKind::Strings:
        ap->set_type(AP::STRINGS);
        for (const auto& v : a.strings()) ap->add_strings(v);
        break;
      case ir::AttrKind::Tensors:
        ap->set_type(AP::TENSORS);
        for (const auto& t : a.tensors()) tensorToProto(t, ap->add_tensors());
        break;
      case ir::AttrKind::Graphs:
        ap->set_type(AP::GRAPHS);
        for (const auto& g : a.graphs()) KILN_TRY(graph(*g, ap->add_graphs(), false));
        break;
    }
    return Status::ok();
  }

  bool trainingDomain_ = false;
  bool kilnDomain_ = false;  ///< kiln's own ops (passes make them); only kiln runs such a model
};

}  // namespace

Expected<std::string> exportOnnxBytes(const ir::Module& module) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("kiln");
  model.set_producer_version("0.1.0");
  if (!module.docString.empty()) model.set_doc_string(module.docString);
  model.set_model_version(module.modelVersion);
  for (const auto& [k, v] : module.metadataProps) {
    auto* p = model.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  Exporter ex;
  KILN_TRY(ex.graph(module.graph(), model.mutable_graph(), true));
  if (!module.name.empty()) model.mutable_graph()->set_name(module.name);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kIrOpset);
  if (ex.usesTrainingDomain()) {
    auto* t = model.add_opset_import();
    t->set_domain("ai.onnx.preview.training");
    t->set_version(1);
  }
  if (ex.usesKilnDomain()) {
    auto* k = model.add_opset_import();
    k->set_domain("kiln");
    k->set_version(1);
  }
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return Error(ErrorCode::Internal, std::string("exported model fails onnx::checker: ") + e.what());
  }
  if (model.ByteSizeLong() > size_t(INT_MAX))
    return Error(ErrorCode::InvalidArgument, "the model is larger than 2 GiB, which a single .onnx file cannot hold");
  std::string out;
  if (!model.SerializeToString(&out)) return Error(ErrorCode::Internal, "cannot serialize the model");
  return out;
}

Status exportOnnxFile(const ir::Module& module, const std::string& path) {
  KILN_ASSIGN(std::string bytes, exportOnnxBytes(module));
  return writeFile(path, bytes);
}

}  // namespace kiln::onnx
