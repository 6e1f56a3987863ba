//===- lib/frontend/onnx/OnnxImporter.cpp - ONNX ModelProto -> kiln Module -===//
//
// Parses the model, checks opsets, and builds each graph in topological order:
// initializers become Constant nodes, each ONNX node becomes a NodeDraft that is
// normalised to its opset-17 form, created, checked against the op table and
// typed at once (so later rewrites see operand types). Subgraphs are imported
// recursively and may use values of enclosing graphs. The main graph's large
// initializers are parsed past protobuf (InitializerSplit.h): their bytes go
// from the file straight into kiln's buffers.
//
//===----------------------------------------------------------------------===//
#include "kiln/frontend/onnx/OnnxImporter.h"

#include <google/protobuf/io/coded_stream.h>

#include <functional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ContribOps.h"
#include "FunctionInlining.h"
#include "InitializerSplit.h"
#include "NewerOpsetForms.h"
#include "OnnxProtoUtils.h"
#include "OpsetNormalizer.h"
#include "ShapeRanges.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/ShapeInference.h"
#include "kiln/ir/Verifier.h"
#include "kiln/support/StringPool.h"

namespace kiln::onnx {
namespace {

/// `inferred` made more specific with what `declared` (compatible) knows.
ir::Type refineType(const ir::Type& inferred, const ir::Type& declared) {
  if (inferred.kind() != declared.kind()) return inferred;
  if (!inferred.isTensor()) {
    ir::Type elem = refineType(inferred.element(), declared.element());
    return inferred.isSequence() ? ir::Type::sequence(elem) : ir::Type::optional(elem);
  }
  const ir::TensorType &a = inferred.tensor(), &b = declared.tensor();
  DType dtype = a.dtype() != DType::Undefined ? a.dtype() : b.dtype();
  if (!b.hasRank()) return ir::Type(a.withDType(dtype));
  if (!a.hasRank()) return ir::Type(b.withDType(dtype));
  // A dim the graph leaves unknown (not symbolic) takes the declared one.
  ir::TensorType t = a.withDType(dtype);
  for (int64_t i = 0; i < t.rank(); ++i)
    if (!a.dimExpr(i) && b.dim(i) >= 0) t.setDimExpr(i, DimExpr(b.dim(i)));
  // Declared names stay on the dims still unknown: a dim bound to a value
  // (--shape) is that value, so a rewrite's result types equal it.
  std::vector<std::string> symbols = b.dimSymbols();
  bool anySymbol = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (int64_t(i) < t.rank() && t.dimExpr(int64_t(i))) symbols[i].clear();
    anySymbol |= !symbols[i].empty();
  }
  if (anySymbol) t.setDimSymbols(symbols);
  return ir::Type(t);
}

std::string displayName(const ::onnx::NodeProto& n) {
  if (!n.name().empty()) return n.name();
  for (const auto& o : n.output())
    if (!o.empty()) return "<producing " + o + ">";
  return "<unnamed " + n.op_type() + ">";
}

Error invalidGraph(const std::string& msg) { return Error(ErrorCode::OnnxInvalidGraph, msg); }

/// Names a subgraph uses that it does not define itself (ONNX implicit inputs).
void collectImplicitInputs(const ::onnx::GraphProto& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& i : g.initializer()) defined.insert(i.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  std::set<std::string> used;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (!i.empty()) used.insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collectImplicitInputs(a.g(), used);
      for (const auto& sg : a.graphs()) collectImplicitInputs(sg, used);
    }
  }
  for (const auto& o : g.output()) used.insert(o.name());
  for (const auto& u : used)
    if (!defined.count(u)) out.insert(u);
}

class Importer final : public DraftBuilder {
 public:
  Importer(ir::Module& module, std::string baseDir, const ImportOptions& options)
      : module_(module), resolver_(std::move(baseDir)), options_(options) {}

  ExternalDataResolver& resolver() { return resolver_; }

  Status importModel(::onnx::ModelProto& model) {
    if (!model.has_graph()) return Error(ErrorCode::OnnxMalformed, "the model has no graph");
    if (model.opset_import_size() == 0)
      return Error(ErrorCode::OnnxUnsupportedOpset, "the model declares no opset_import (IR version < 3 is not supported)");
    for (const auto& o : model.opset_import()) {
      std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
      opsets_[domain] = o.version();
      module_.opsetImports[o.domain()] = o.version();
    }
    auto it = opsets_.find("");
    if (it != opsets_.end() && (it->second < kOldestOpset || it->second > kMaxOpset))
      return Error(ErrorCode::OnnxUnsupportedOpset, "the model uses opset " + std::to_string(it->second) +
                                                        " of the default domain; kiln imports opsets " +
                                                        std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
    if (auto t = opsets_.find("ai.onnx.preview.training"); t != opsets_.end() && t->second != 1)
      return Error(ErrorCode::OnnxUnsupportedOpset, "the model uses opset " + std::to_string(t->second) +
                                                        " of ai.onnx.preview.training; kiln supports version 1");
    for (const auto& f : model.functions()) functions_[f.domain() + "::" + f.name()] = &f;
    KILN_TRY(checkFunctionsDoNotRecurse());
    module_.name = model.graph().name();
    module_.producerName = model.producer_name();
    module_.producerVersion = model.producer_version();
    module_.docString = model.doc_string();
    module_.irVersion = model.ir_version();
    module_.modelVersion = model.model_version();
    for (const auto& p : model.metadata_props()) module_.metadataProps.emplace_back(p.key(), p.value());
    reserveNames(model.graph(), reserved_);
    KILN_TRY(importGraph(*model.mutable_graph(), module_.graph(), true));
    return ir::verify(module_.graph(), {.checkTypes = false});
  }

  // DraftBuilder: helper nodes go into the graph being imported, named after
  // the node being normalised.
  Expected<ir::Value*> constant(const Tensor& value) override {
    ir::Node* n = current_->createNode(ir::opSchema("Constant"), {}, std::vector<std::string>{freshName("const")},
                                       currentName_);
    n->setAttr("value", ir::Attribute(value));
    KILN_TRY(inferencer_.inferNode(*n));
    return n->output(0);
  }
  Expected<ir::Value*> node(const std::string& opType, std::vector<ir::Value*> inputs,
                            std::vector<std::pair<std::string, ir::Attribute>> attrs) override {
    NodeDraft d;
    d.opType = opType;
    d.name = currentName_;
    d.inputs = std::move(inputs);
    d.attrs = std::move(attrs);
    d.outputs = {freshName(opType)};
    KILN_ASSIGN(ir::Node * n, createNode(d, *current_, opsets_[""]));
    return n->output(0);
  }
  const Tensor* knownValue(const ir::Value* v) const override { return inferencer_.knownValue(v); }
  std::optional<NarrowType> narrowType(const ir::Value* v) const override {
    auto it = narrow_.find(v);
    return it == narrow_.end() ? std::nullopt : std::optional<NarrowType>(it->second);
  }
  bool isString(const ir::Value* v) const override { return strings_.count(v) != 0; }

 private:
  std::string freshName(const std::string& base) {
    return freeName(*current_, (currentName_.empty() ? std::string("kiln") : currentName_) + "/" + base);
  }

  /// A name free in `g`'s scope that the model does not define anywhere.
  std::string freeName(ir::Graph& g, const std::string& base) {
    std::string name = g.uniqueValueName(base);
    for (int k = 1; reserved_.count(name); ++k) name = g.uniqueValueName(base + "_" + std::to_string(k));
    return name;
  }

  static void reserveNames(const ::onnx::GraphProto& g, std::unordered_set<std::string>& out) {
    for (const auto& i : g.input()) out.insert(i.name());
    for (const auto& i : g.initializer()) out.insert(i.name());
    for (const auto& n : g.node()) {
      for (const auto& o : n.output()) out.insert(o);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) reserveNames(a.g(), out);
        for (const auto& sg : a.graphs()) reserveNames(sg, out);
      }
    }
  }

  /// The value of `name` in the innermost scope that defines it (not below a function body's frame).
  ir::Value* lookup(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > scopeFloor_;) {
      auto f = scopes_[i].find(name);
      if (f != scopes_[i].end()) return f->second;
    }
    return nullptr;
  }

  Status define(const std::string& name, ir::Value* v) {
    if (lookup(name) && lookup(name) != v) return invalidGraph("value '" + name + "' is defined twice");
    scopes_.back()[name] = v;
    return Status::ok();
  }

  Status importGraph(::onnx::GraphProto& gp, ir::Graph& g, bool root) {
    if (!root) ++subgraphDepth_;
    scopes_.emplace_back();
    ir::Graph* saved = current_;
    current_ = &g;
    if (!root) g.setName(gp.name().empty() ? g.name() : gp.name());
    if (gp.sparse_initializer_size() > 0)
      return Error(ErrorCode::UnsupportedType, "sparse initializers are not supported by kiln");

    std::unordered_set<std::string> initializerNames;
    for (auto& init : *gp.mutable_initializer()) {
      if (init.name().empty()) return invalidGraph("an initializer has no name");
      if (!initializerNames.insert(init.name()).second)
        return invalidGraph("initializer '" + init.name() + "' is defined twice");
    }
    // Graph inputs (those shadowed by an initializer are constants, as in IR < 4).
    std::set<std::string> bound;
    for (const auto& in : gp.input()) {
      if (initializerNames.count(in.name())) continue;
      if (in.name().empty()) return invalidGraph("a graph input has no name");
      auto type = typeFromProto(in.type());
      if (!type) return Error(type.error()).withContext("graph input '" + in.name() + "'");
      ir::Type t = *type;
      if (root) {
        if (auto s = options_.inputShapes.find(in.name()); s != options_.inputShapes.end()) {
          KILN_ASSIGN(t, bindShape(in.name(), t, s->second));
          bound.insert(in.name());
        } else {
          KILN_ASSIGN(t, rangedInputType(in.name(), t, options_, module_.dimRanges));
        }
      }
      if (g.isValueNameTaken(in.name())) return invalidGraph("value '" + in.name() + "' is defined twice");
      ir::Value* input = g.addInput(in.name(), t);
      if (in.type().has_tensor_type()) markNarrow(input, narrowTypeFromOnnx(in.type().tensor_type().elem_type()));
      if (in.type().has_tensor_type() && in.type().tensor_type().elem_type() == kOnnxStringCode) {
        strings_.insert(input);
        if (root) module_.stringInputs.insert(in.name());
      }
      KILN_TRY(define(in.name(), input));
    }
    if (root)
      for (const auto& [name, dims] : options_.inputShapes)
        if (!bound.count(name)) {
          std::string names;
          for (ir::Value* v : g.inputs()) names += (names.empty() ? "" : ", ") + v->name();
          return Error(ErrorCode::ShapeBinding,
                       "--shape names '" + name + "', which is not a graph input (inputs: " + names + ")");
        }
    if (root) {
      KILN_TRY(checkRangeCoverage(g, options_));
      inferencer_.setDimRanges(module_.dimRanges);
    }
    for (auto& init : *gp.mutable_initializer()) {
      auto t = tensorFromProto(init, &resolver_);
      if (!t) return Error(t.error()).withContext("initializer");
      if (g.isValueNameTaken(init.name())) return invalidGraph("value '" + init.name() + "' is defined twice");
      ir::Node* n = g.createNode(ir::opSchema("Constant"), {}, std::vector<std::string>{init.name()});
      n->setAttr("value", ir::Attribute(*t));
      KILN_TRY(inferencer_.inferNode(*n));
      markNarrow(n->output(0), narrowTypeFromOnnx(init.data_type()));
      if (init.data_type() == kOnnxStringCode) strings_.insert(n->output(0));
      KILN_TRY(define(init.name(), n->output(0)));
    }

    KILN_ASSIGN(std::vector<int> order, topologicalOrder(gp));
    for (int i : order) {
      current_ = &g;
      KILN_TRY(importNode(*gp.mutable_node(i), g));
    }

    for (const auto& out : gp.output()) {
      ir::Value* v = lookup(out.name());
      if (!v) return invalidGraph("graph output '" + out.name() + "' is not produced by any node, input or initializer");
      KILN_TRY(checkDeclaredOutput(out, v));
      g.addOutput(v);
      if (root && strings_.count(v)) module_.stringOutputs.insert(out.name());
    }
    scopes_.pop_back();
    current_ = saved;
    if (!root) --subgraphDepth_;
    return Status::ok();
  }

  Expected<ir::Type> bindShape(const std::string& name, const ir::Type& declared, const Dims& dims) {
    if (!declared.isTensor())
      return Error(ErrorCode::ShapeBinding, "input '" + name + "' is a " + declared.str() + ", not a tensor");
    const ir::TensorType& t = declared.tensor();
    if (t.hasRank() && t.rank() != int64_t(dims.size()))
      return Error(ErrorCode::ShapeBinding, "input '" + name + "' has rank " + std::to_string(t.rank()) +
                                                " (" + t.str() + "), --shape gives " + std::to_string(dims.size()) +
                                                " dims");
    if (!t.accepts(dims))
      return Error(ErrorCode::ShapeBinding, "input '" + name + "' is declared " + t.str() + "; --shape " +
                                                dimsToString(dims) + " contradicts a fixed dim");
    return ir::Type(ir::TensorType(t.dtype(), dims));
  }

  Status checkDeclaredOutput(const ::onnx::ValueInfoProto& out, ir::Value* v) {
    if (!out.has_type()) return Status::ok();
    auto declared = typeFromProto(out.type());
    if (!declared) return Error(declared.error()).withContext("graph output '" + out.name() + "'");
    if (!ir::typesCompatible(*declared, v->type()))
      return Error(ErrorCode::ShapeMismatch, "graph output '" + out.name() + "' is declared " + declared->str() +
                                                 " but the graph computes " + v->type().str());
    // Where the graph leaves a dim (or the rank) unknown, take the declaration.
    v->setType(refineType(v->type(), *declared));
    return Status::ok();
  }

  Expected<std::vector<int>> topologicalOrder(const ::onnx::GraphProto& gp) {
    int n = gp.node_size();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < n; ++i)
      for (const auto& o : gp.node(i).output()) {
        if (o.empty()) continue;
        if (!producer.emplace(o, i).second || lookup(o))
          return invalidGraph("value '" + o + "' is defined twice (node '" + displayName(gp.node(i)) + "')");
      }
    std::vector<std::vector<int>> users(static_cast<size_t>(n));
    std::vector<int> pending(static_cast<size_t>(n), 0);
    for (int i = 0; i < n; ++i) {
      const auto& node = gp.node(i);
      std::set<std::string> needs;
      for (const auto& in : node.input())
        if (!in.empty()) needs.insert(in);
      for (const auto& a : node.attribute()) {
        if (a.has_g()) collectImplicitInputs(a.g(), needs);
        for (const auto& sg : a.graphs()) collectImplicitInputs(sg, needs);
      }
      for (const auto& name : needs) {
        auto p = producer.find(name);
        if (p != producer.end()) {
          users[size_t(p->second)].push_back(i);
          ++pending[size_t(i)];
        } else if (!lookup(name)) {
          bool direct = std::find(node.input().begin(), node.input().end(), name) != node.input().end();
          if (direct)
            return Error(invalidGraph("input '" + name + "' is not defined (no graph input, initializer or node produces it)"))
                .atNode(displayName(node), node.op_type());
        }
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < n; ++i)
      if (pending[size_t(i)] == 0) ready.push(i);
    std::vector<int> order;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int u : users[size_t(i)])
        if (--pending[size_t(u)] == 0) ready.push(u);
    }
    if (int(order.size()) != n)
      for (int i = 0; i < n; ++i)
        if (pending[size_t(i)] > 0)
          return Error(invalidGraph("the graph has a cycle through this node")).atNode(displayName(gp.node(i)), gp.node(i).op_type());
    return order;
  }

  int64_t opsetOf(const std::string& domain) const {
    auto it = opsets_.find(domain == "ai.onnx" ? "" : domain);
    return it == opsets_.end() ? 0 : it->second;
  }

  Expected<ir::Attribute> convertAttribute(::onnx::AttributeProto& a, ir::Graph& g) {
    using AP = ::onnx::AttributeProto;
    if (!a.ref_attr_name().empty())
      return Error(ErrorCode::BadAttribute, "attribute '" + a.name() + "' refers to a function attribute");
    AP::AttributeType type = a.type();
    if (type == AP::UNDEFINED) {  // old exporters: infer the kind from the field that is set
      if (a.has_g()) type = AP::GRAPH;
      else if (a.has_t()) type = AP::TENSOR;
      else if (a.has_s()) type = AP::STRING;
      else if (a.has_f()) type = AP::FLOAT;
      else if (a.has_i()) type = AP::INT;
      else if (a.floats_size()) type = AP::FLOATS;
      else if (a.ints_size()) type = AP::INTS;
      else if (a.strings_size()) type = AP::STRINGS;
      else if (a.tensors_size()) type = AP::TENSORS;
      else if (a.graphs_size()) type = AP::GRAPHS;
      else return Error(ErrorCode::BadAttribute, "attribute '" + a.name() + "' has no type and no value");
    }
    switch (type) {
      case AP::FLOAT: return ir::Attribute(a.f());
      case AP::INT: return ir::Attribute(int64_t(a.i()));
      case AP::STRING: return ir::Attribute(a.s());
      case AP::TENSOR: {
        auto t = tensorFromProto(*a.mutable_t(), &resolver_);
        if (!t) return Error(t.error()).withContext("attribute '" + a.name() + "'");
        return ir::Attribute(*t);
      }
      case AP::GRAPH: {
        auto sub = g.createSubgraph(a.name());
        KILN_TRY(importGraph(*a.mutable_g(), *sub, false));
        return ir::Attribute(std::move(sub));
      }
      case AP::FLOATS: return ir::Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
      case AP::INTS: return ir::Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      case AP::STRINGS: return ir::Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
      case AP::TENSORS: {
        std::vector<Tensor> ts;
        for (auto& tp : *a.mutable_tensors()) {
          KILN_ASSIGN(Tensor t, tensorFromProto(tp, &resolver_));
          ts.push_back(t);
        }
        return ir::Attribute(ts);
      }
      case AP::GRAPHS: {
        std::vector<std::unique_ptr<ir::Graph>> gs;
        for (auto& gp : *a.mutable_graphs()) {
          auto sub = g.createSubgraph(a.name());
          KILN_TRY(importGraph(gp, *sub, false));
          gs.push_back(std::move(sub));
        }
        return ir::Attribute(std::move(gs));
      }
      case AP::SPARSE_TENSOR:
      case AP::SPARSE_TENSORS:
        return Error(ErrorCode::UnsupportedType, "sparse tensor attribute '" + a.name() + "' is not supported");
      case AP::TYPE_PROTO:
      case AP::TYPE_PROTOS:
        return Error(ErrorCode::UnsupportedType, "type attribute '" + a.name() + "' is not supported");
      default: return Error(ErrorCode::BadAttribute, "attribute '" + a.name() + "' has an unknown type");
    }
  }

  Status importNode(::onnx::NodeProto& np, ir::Graph& g) {
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    int64_t opset = opsetOf(domain);
    auto located = [&](Error e) { return std::move(e.atNode(displayName(np), np.op_type(), opset)); };
    if (!opsets_.count(domain))
      return located(Error(ErrorCode::OnnxUnsupportedOpset,
                           "the model does not import the op's domain '" + (domain.empty() ? std::string("ai.onnx") : domain) + "'"));
    if (auto f = functions_.find(np.domain() + "::" + np.op_type()); f != functions_.end()) {
      Status s = inlineFunction(np, *f->second, g);
      if (!s.isOk()) return located(std::move(s).error());
      return Status::ok();
    }
    NodeDraft d;
    d.opType = np.op_type();
    d.domain = domain;
    d.name = np.name();
    FormHandler contrib = contribOpHandler(domain, d.opType);
    std::optional<NewerOpVersion> newer = domain.empty() && !contrib ? newerOpVersion(d.opType, opset) : std::nullopt;
    std::string probe = d.opType == "Upsample" ? "Resize" : d.opType == "Scatter" ? "ScatterElements" : d.opType;
    if (!newer && !contrib && !ir::OpRegistry::global().find(domain, probe)) {
      if (int since = domain.empty() ? firstNewerVersion(d.opType) : 0)
        return located(Error(ErrorCode::OnnxInvalidGraph, "op '" + d.opType + "' exists from opset " +
                                                              std::to_string(since) + " on; the model imports opset " +
                                                              std::to_string(opset)));
      std::string where = domain.empty() ? "" : " (domain '" + domain + "')";
      return located(Error(ErrorCode::OnnxUnsupportedOp, "op '" + np.op_type() + "'" + where + " is not supported by kiln"));
    }
    for (const auto& in : np.input()) {
      if (in.empty()) {
        d.inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = lookup(in);
      if (!v && !isAbsentFormal(in))
        return located(invalidGraph("input '" + in + "' is not defined (no graph input, initializer or node produces it)"));
      d.inputs.push_back(v);
    }
    for (auto& a : *np.mutable_attribute()) {
      auto attr = convertAttribute(a, g);
      if (!attr) return located(std::move(attr).error());
      if (d.attr(a.name())) return located(Error(ErrorCode::BadAttribute, "attribute '" + a.name() + "' is given twice"));
      d.attrs.emplace_back(a.name(), std::move(*attr));
    }
    d.outputs.assign(np.output().begin(), np.output().end());
    while (!d.outputs.empty() && d.outputs.back().empty()) d.outputs.pop_back();
    // Inside a function body, the body's names stay its own: the graph gets fresh ones.
    std::vector<std::string> scopeNames = d.outputs;
    if (inlineDepth_ > 0)
      for (std::string& o : d.outputs)
        if (!o.empty()) o = freeName(g, currentNameFor(np) + "/" + o);
    current_ = &g;
    currentName_ = np.name().empty() ? displayName(np) : np.name();  // after nested subgraph imports
    const std::optional<NarrowType> narrowResult = domain.empty() ? narrowResultOf(np, d) : std::nullopt;
    const bool stringResults = domain.empty() && makesStrings(np, d);
    const std::string importedOp = d.opType;
    Status s = domain.empty() ? stringForm(d, *this) : Status::ok();
    const bool rewritten = d.opType != importedOp;
    if (s.isOk() && !rewritten) s = contrib ? contrib(d, *this) : newer ? normalizeNewerForm(d, *newer, *this) : Status::ok();
    if (contrib) d.domain.clear();  // written as default-domain ops
    if (s.isOk()) s = normalizeDraft(d, opsetOf(""), *this);
    if (!s.isOk()) return located(std::move(s).error());
    auto node = createNode(d, g, opset);
    if (!node) return located(std::move(node).error());
    if (!d.outputs.empty()) markNarrow((*node)->output(0), narrowResult);
    markStrings(**node, importedOp, stringResults);
    for (size_t i = 0; i < d.outputs.size(); ++i)
      if (!d.outputs[i].empty()) KILN_TRY(define(scopeNames[i], (*node)->output(i)));
    for (const auto& [name, value] : d.computedOutputs)
      if (!name.empty()) KILN_TRY(defineAs(name, value, d.name, g));
    return Status::ok();
  }

  void markNarrow(const ir::Value* v, std::optional<NarrowType> t) {
    if (t) narrow_[v] = *t;
  }

  /// Whether a default-domain node's results hold strings, read before its
  /// draft is rewritten: a string constant, a cast to STRING, the string ops,
  /// and the ops that move or select the elements of a string operand.
  bool makesStrings(const ::onnx::NodeProto& np, const NodeDraft& d) const {
    const std::string& op = np.op_type();
    if (op == "Constant") {
      for (const auto& a : np.attribute())
        if (a.name() == "value_string" || a.name() == "value_strings" ||
            (a.name() == "value" && a.t().data_type() == kOnnxStringCode))
          return true;
      return false;
    }
    if (op == "Cast" || op == "CastLike") return castsToString(d, *this);
    if (op == "StringNormalizer" || op == "StringConcat" || op == "StringSplit") return true;
    static const std::set<std::string> kNotStrings = {"Shape", "Size", "Equal", "RegexFullMatch", "If", "Loop", "Scan"};
    if (kNotStrings.count(op)) return false;
    return std::any_of(d.inputs.begin(), d.inputs.end(), [&](const ir::Value* v) { return v && isString(v); });
  }

  /// Marks the results of `node` that hold strings: every i64 result (or
  /// sequence of them) when `stringResults` (but StringSplit's counts), and
  /// a control-flow op's results whose subgraph outputs hold strings.
  void markStrings(const ir::Node& node, const std::string& importedOp, bool stringResults) {
    auto holdsIds = [](const ir::Type& t) {
      const ir::Type& e = t.isSequence() || t.isOptional() ? t.element() : t;
      return e.isTensor() && e.tensor().dtype() == DType::I64;
    };
    for (size_t i = 0; i < node.numOutputs(); ++i)
      if (stringResults && holdsIds(node.output(i)->type()) && !(importedOp == "StringSplit" && i == 1))
        strings_.insert(node.output(i));
    // Loop's body outputs begin with its condition.
    const size_t skip = importedOp == "Loop" ? 1 : 0;
    for (const ir::Graph* body : node.subgraphs())
      for (size_t i = 0; i < node.numOutputs() && i + skip < body->outputs().size(); ++i)
        if (strings_.count(body->outputs()[i + skip])) strings_.insert(node.output(i));
  }

  /// The narrow type of a default-domain node's first result, read before its
  /// draft is rewritten: what a constant holds, what a cast or quantization
  /// produces, and what the type-preserving ops ONNX allows on narrow types pass on.
  std::optional<NarrowType> narrowResultOf(const ::onnx::NodeProto& np, const NodeDraft& d) const {
    auto attrCode = [&](const char* name) -> int {
      for (const auto& a : np.attribute())
        if (a.name() == name) return a.has_t() ? a.t().data_type() : int(a.i());
      return 0;
    };
    auto input = [&](size_t i) {
      return i < d.inputs.size() && d.inputs[i] ? narrowType(d.inputs[i]) : std::nullopt;
    };
    const std::string& op = np.op_type();
    if (op == "Constant" || op == "ConstantOfShape") return narrowTypeFromOnnx(attrCode("value"));
    if (op == "Cast") return narrowTypeFromOnnx(attrCode("to"));
    if (op == "CastLike") return input(1);
    if (op == "QuantizeLinear") {
      if (auto t = narrowTypeFromOnnx(attrCode("output_dtype"))) return t;
      return input(2);
    }
    static const std::set<std::string> kPassing = {"Identity", "Reshape", "Flatten", "Squeeze",
                                                   "Unsqueeze", "Transpose", "Pad"};
    return kPassing.count(op) ? input(0) : std::nullopt;
  }

  static std::string currentNameFor(const ::onnx::NodeProto& np) { return np.name().empty() ? displayName(np) : np.name(); }

  /// A formal input of the function body being imported that the call leaves out.
  bool isAbsentFormal(const std::string& name) const {
    if (inlineDepth_ == 0) return false;
    auto f = scopes_[scopeFloor_].find(name);
    return f != scopes_[scopeFloor_].end() && !f->second;
  }

  /// The model-local functions that `g`'s nodes (and their subgraphs') call.
  void calledFunctions(const ::onnx::GraphProto& g, std::vector<std::string>& out) const {
    for (const auto& n : g.node()) {
      if (functions_.count(n.domain() + "::" + n.op_type())) out.push_back(n.domain() + "::" + n.op_type());
      for (const auto& a : n.attribute()) {
        if (a.has_g()) calledFunctions(a.g(), out);
        for (const auto& sg : a.graphs()) calledFunctions(sg, out);
      }
    }
  }

  /// Refuses functions that call themselves, directly or through others (inlining would not end).
  Status checkFunctionsDoNotRecurse() const {
    std::map<std::string, int> state;  // 1: on the current path, 2: done
    std::function<Status(const std::string&)> visit = [&](const std::string& name) -> Status {
      if (state[name] == 2) return Status::ok();
      if (state[name] == 1)
        return Error(ErrorCode::OnnxInvalidGraph, "model-local function '" + name + "' calls itself");
      state[name] = 1;
      ::onnx::GraphProto body;
      for (const auto& n : functions_.at(name)->node()) *body.add_node() = n;
      std::vector<std::string> callees;
      calledFunctions(body, callees);
      for (const std::string& c : callees) KILN_TRY(visit(c));
      state[name] = 2;
      return Status::ok();
    };
    for (const auto& [name, f] : functions_) KILN_TRY(visit(name));
    return Status::ok();
  }

  /// Imports a call of a model-local function as the function's body.
  Status inlineFunction(const ::onnx::NodeProto& call, const ::onnx::FunctionProto& f, ir::Graph& g) {
    if (inlineDepth_ >= kMaxInlineDepth)
      return invalidGraph("model-local functions call each other deeper than " + std::to_string(kMaxInlineDepth) +
                          " levels");
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
      return invalidGraph("the call has more inputs or outputs than function '" + f.name() + "' declares");
    std::string callName = currentNameFor(call);
    KILN_ASSIGN(std::vector<::onnx::NodeProto> body, instantiateFunctionBody(f, call, callName));
    std::unordered_map<std::string, ir::Value*> frame;
    for (int i = 0; i < f.input_size(); ++i) {
      const std::string actual = i < call.input_size() ? call.input(i) : std::string();
      ir::Value* v = actual.empty() ? nullptr : lookup(actual);
      if (!actual.empty() && !v) return invalidGraph("input '" + actual + "' is not defined");
      frame[f.input(i)] = v;
    }
    // The body sees its own opset imports over the model's.
    std::map<std::string, int64_t> savedOpsets = opsets_;
    for (const auto& o : f.opset_import()) opsets_[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
    size_t savedFloor = scopeFloor_;
    scopes_.push_back(std::move(frame));
    scopeFloor_ = scopes_.size() - 1;
    ++inlineDepth_;
    auto restore = [&] {
      --inlineDepth_;
      scopeFloor_ = savedFloor;
      opsets_ = savedOpsets;
    };
    std::vector<ir::Value*> results;
    Status s = Status::ok();
    for (auto& n : body) {
      s = importNode(n, g);
      if (!s.isOk()) break;
    }
    for (int k = 0; s.isOk() && k < call.output_size(); ++k) {
      ir::Value* v = call.output(k).empty() ? nullptr : lookup(f.output(k));
      if (!call.output(k).empty() && !v)
        s = invalidGraph("function '" + f.name() + "' does not compute its output '" + f.output(k) + "'");
      results.push_back(v);
    }
    scopes_.pop_back();
    restore();
    if (!s.isOk()) return s;
    // The call's outputs keep the call's names (graph outputs among them).
    for (int k = 0; k < call.output_size(); ++k)
      if (results[size_t(k)]) KILN_TRY(defineAs(call.output(k), results[size_t(k)], callName, g));
    return Status::ok();
  }

  /// Defines `name` as an Identity of `v` that carries the name into the graph.
  Status defineAs(const std::string& name, ir::Value* v, const std::string& nodeName, ir::Graph& g) {
    NodeDraft alias;
    alias.opType = "Identity";
    alias.name = nodeName;
    alias.inputs = {v};
    alias.outputs = {inlineDepth_ > 0 ? freeName(g, nodeName + "/" + name) : name};
    KILN_ASSIGN(ir::Node * n, createNode(alias, g, opsets_[""]));
    return define(name, n->output(0));
  }

  /// Creates, checks and types the node a draft describes.
  Expected<ir::Node*> createNode(NodeDraft& d, ir::Graph& g, int64_t opset) {
    const ir::OpSchema* schema = ir::OpRegistry::global().find(d.domain, d.opType);
    if (!schema) return Error(ErrorCode::OnnxUnsupportedOp, "op '" + d.opType + "' is not supported by kiln");
    std::vector<std::string> names;
    for (const auto& o : d.outputs) {
      if (!o.empty() && (g.isValueNameTaken(o) || lookup(o))) return invalidGraph("value '" + o + "' is defined twice");
      std::string name = o;
      // Unused results get distinct names (none exists until the node does).
      for (int k = 0; name.empty() || (o.empty() && std::count(names.begin(), names.end(), name)); ++k)
        name = freeName(g, (d.name.empty() ? d.opType : d.name) + "/unused" + (k ? "_" + std::to_string(k) : ""));
      names.push_back(name);
    }
    ir::Node* node = g.createNode(*schema, d.inputs, names, d.name);
    for (auto& [name, a] : d.attrs) node->setAttr(name, std::move(a));
    Status s = ir::checkNodeAgainstSchema(*node);
    if (s.isOk()) {
      s = inferencer_.inferNode(*node);
      // Inside a body, operand types may be unknown until the parent node types
      // the body (If/Loop/Scan/SequenceMap inference); errors surface then.
      if (!s.isOk() && subgraphDepth_ > 0) {
        for (ir::Value* v : node->outputs()) v->setType(ir::Type());
        s = Status::ok();
      }
    }
    if (!s.isOk()) {
      Error e = std::move(s).error();
      e.atNode(d.name.empty() ? currentName_ : d.name, d.opType, opset).withOpset(opset);
      return e;
    }
    return node;
  }

  ir::Module& module_;
  ExternalDataResolver resolver_;
  /// Values the model gives a narrow type (kiln holds them on carriers).
  std::unordered_map<const ir::Value*, NarrowType> narrow_;
  /// Values the model gives the STRING type (kiln holds them as i64 ids).
  std::unordered_set<const ir::Value*> strings_;
  const ImportOptions& options_;
  ir::ShapeInferencer inferencer_;
  std::vector<std::unordered_map<std::string, ir::Value*>> scopes_;
  std::map<std::string, int64_t> opsets_;
  std::map<std::string, const ::onnx::FunctionProto*> functions_;
  static constexpr int kMaxInlineDepth = 32;
  int inlineDepth_ = 0;
  size_t scopeFloor_ = 0;
  std::unordered_set<std::string> reserved_;
  ir::Graph* current_ = nullptr;
  std::string currentName_;
  int subgraphDepth_ = 0;
};

std::string dirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace

namespace {
/// Initializers with at least this much raw data are split out of the message (4 KiB: smaller ones gain nothing).
constexpr size_t kSplitRawDataBytes = 4096;

Expected<std::unique_ptr<ir::Module>> importFromMemory(const uint8_t* data, size_t size, const std::string& baseDir,
                                                       const ImportOptions& options) {
  if (size > size_t(INT_MAX))
    return Error(ErrorCode::OnnxMalformed, "the model file is larger than 2 GiB; store weights as external data");
  auto parse = [](const uint8_t* bytes, size_t n, ::onnx::ModelProto& model) {
    google::protobuf::io::CodedInputStream stream(bytes, int(n));
    stream.SetRecursionLimit(200);
    return model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
  };
  auto model = std::make_unique<::onnx::ModelProto>();
  auto module = std::make_unique<ir::Module>();
  Importer importer(*module, baseDir, options);
  // The weights are copied once, from `data` into kiln's buffers, instead of into protobuf's strings first.
  std::optional<SplitModel> split = splitInitializerData(data, size, kSplitRawDataBytes);
  if (split && parse(reinterpret_cast<const uint8_t*>(split->message.data()), split->message.size(), *model) &&
      size_t(model->graph().initializer_size()) == split->rawData.size()) {
    for (size_t i = 0; i < split->rawData.size(); ++i)
      if (const std::optional<ByteRange>& raw = split->rawData[i])
        importer.resolver().setSplitRawData(&model->graph().initializer(int(i)), data + raw->offset, raw->size);
  } else if (model->Clear(); !parse(data, size, *model)) {
    return Error(ErrorCode::OnnxMalformed,
                 "the file is not a valid ONNX model (protobuf parsing failed; truncated or corrupt?)");
  }
  KILN_TRY(importer.importModel(*model));
  return module;
}
}  // namespace

Expected<std::unique_ptr<ir::Module>> importOnnxBytes(const std::string& bytes, const std::string& baseDir,
                                                      const ImportOptions& options) {
  return importFromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), baseDir, options);
}

Expected<std::unique_ptr<ir::Module>> importOnnxFile(const std::string& path, const ImportOptions& options) {
  // Mapped, not read: only the parsed message holds a copy of the weights.
  KILN_ASSIGN(auto file, MappedFile::open(path));
  static const uint8_t kEmpty = 0;
  return importFromMemory(file->size() ? file->data() : &kEmpty, file->size(), dirName(path), options);
}

namespace {

/// "name:1x3x224x224" as given to `flag`.
Expected<std::pair<std::string, Dims>> parseNamedDims(const std::string& flag, const std::string& spec) {
  size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Error(ErrorCode::InvalidArgument, flag + " '" + spec + "' must look like name:1x3x224x224");
  std::string name = spec.substr(0, colon), dimsText = spec.substr(colon + 1);
  Dims dims;
  size_t pos = 0;
  while (pos <= dimsText.size() && !dimsText.empty()) {
    size_t x = dimsText.find('x', pos);
    std::string part = dimsText.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      return Error(ErrorCode::InvalidArgument, flag + " '" + spec + "': '" + part + "' is not a dim (dims are separated by 'x')");
    dims.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return std::pair{name, dims};
}

}  // namespace

Status parseShapeBinding(const std::string& spec, ImportOptions& options) {
  KILN_ASSIGN(auto named, parseNamedDims("--shape", spec));
  options.inputShapes[named.first] = named.second;
  return Status::ok();
}

Status parseShapeRange(const std::string& flag, const std::string& spec, std::map<std::string, Dims>& shapes) {
  KILN_ASSIGN(auto named, parseNamedDims(flag, spec));
  if (!shapes.emplace(named.first, named.second).second)
    return Error(ErrorCode::InvalidArgument, flag + " gives input '" + named.first + "' twice");
  return Status::ok();
}

}  // namespace kiln::onnx
