//===- lib/ir/OpSchema.cpp - Op registry, schema builder, inference context -===//
//
// The global op table is built once, on first use, by registerAllOps(), which
// lists every op family explicitly.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/OpSchema.h"

#include <mutex>

#include "kiln/ir/Node.h"
#include "ops/OpFamilies.h"

namespace kiln::ir {

const char* fusionPatternName(FusionPattern p) {
  switch (p) {
    case FusionPattern::Elementwise: return "elementwise";
    case FusionPattern::Broadcast: return "broadcast";
    case FusionPattern::Injective: return "injective";
    case FusionPattern::CommReduce: return "comm-reduce";
    case FusionPattern::OutEWiseFusable: return "out-elementwise-fusable";
    case FusionPattern::Opaque: return "opaque";
  }
  return "?";
}

size_t InferenceContext::numInputs() const { return node_.numInputs(); }
bool InferenceContext::hasInput(size_t i) const { return node_.hasInput(i); }
size_t InferenceContext::numOutputs() const { return node_.numOutputs(); }

Expected<TensorType> InferenceContext::inputTensor(size_t i) const {
  if (!hasInput(i))
    return Error(ErrorCode::ShapeMismatch, "input " + std::to_string(i) + " is missing");
  const Type& t = inputType(i);
  if (!t.isTensor())
    return Error(ErrorCode::ShapeMismatch,
                 "input " + std::to_string(i) + " must be a tensor, got " + t.str());
  return t.tensor();
}

const AttrSpec* OpSchema::findAttr(std::string_view attrName) const {
  for (const AttrSpec& a : attrs)
    if (a.name == attrName) return &a;
  return nullptr;
}

SchemaBuilder::SchemaBuilder(std::string name, std::string domain) {
  schema_.name = std::move(name);
  schema_.domain = std::move(domain);
}
SchemaBuilder& SchemaBuilder::inputs(int min, int max, std::vector<std::string> names) {
  schema_.minInputs = min;
  schema_.maxInputs = max;
  schema_.requiredInputs = min;
  schema_.inputNames = std::move(names);
  return *this;
}
SchemaBuilder& SchemaBuilder::requiredInputs(int n) {
  schema_.requiredInputs = n;
  return *this;
}
SchemaBuilder& SchemaBuilder::outputs(int min, int max, std::vector<std::string> names) {
  schema_.minOutputs = min;
  schema_.maxOutputs = max;
  schema_.outputNames = std::move(names);
  return *this;
}
SchemaBuilder& SchemaBuilder::attr(std::string name, Attribute defaultValue) {
  AttrKind kind = defaultValue.kind();
  schema_.attrs.push_back({std::move(name), kind, false, std::move(defaultValue)});
  return *this;
}
SchemaBuilder& SchemaBuilder::requiredAttr(std::string name, AttrKind kind) {
  schema_.attrs.push_back({std::move(name), kind, true, std::nullopt});
  return *this;
}
SchemaBuilder& SchemaBuilder::optionalAttr(std::string name, AttrKind kind) {
  schema_.attrs.push_back({std::move(name), kind, false, std::nullopt});
  return *this;
}
SchemaBuilder& SchemaBuilder::pattern(FusionPattern p) {
  schema_.pattern = p;
  return *this;
}
SchemaBuilder& SchemaBuilder::infer(InferFn fn) {
  schema_.infer = fn;
  return *this;
}
SchemaBuilder& SchemaBuilder::doc(std::string text) {
  schema_.doc = std::move(text);
  return *this;
}
SchemaBuilder& SchemaBuilder::nondeterministic() {
  schema_.nondeterministic = true;
  return *this;
}

const OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    registerAllOps(*r);
    return r;
  }();
  return *registry;
}

const OpSchema* OpRegistry::find(std::string_view domain, std::string_view name) const {
  std::string key = domain.empty() || domain == "ai.onnx" ? std::string(name)
                                                          : std::string(domain) + "::" + std::string(name);
  auto it = schemas_.find(key);
  return it == schemas_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [key, schema] : schemas_) out.push_back(schema.get());
  return out;
}

void OpRegistry::add(OpSchema schema) {
  KILN_CHECK(schema.infer, "op ", schema.name, " has no inference function");
  std::string key = schema.qualifiedName();
  std::optional<Op> op = findOp(schema.domain, schema.name);
  KILN_CHECK(op.has_value(), "op ", key, " has no entry in kiln/ir/Ops.def");
  schema.op = *op;
  bool inserted = schemas_.emplace(key, std::make_unique<OpSchema>(std::move(schema))).second;
  KILN_CHECK(inserted, "op ", key, " registered twice");
}

void registerAllOps(OpRegistry& r) {
  registerElementwiseOps(r);
  registerReductionOps(r);
  registerConvPoolOps(r);
  registerNormalizationOps(r);
  registerLinearAlgebraOps(r);
  registerShapeOps(r);
  registerIndexingOps(r);
  registerControlFlowOps(r);
  registerSequenceOps(r);
  registerRecurrentOps(r);
  registerQuantizationOps(r);
  registerSignalOps(r);
  registerLossAndTrainingOps(r);
  registerDetectionOps(r);
  registerGeneratorOps(r);
  registerKilnOps(r);
  registerStringOps(r);
  registerImageOps(r);
}

const OpSchema& opSchema(std::string_view name, std::string_view domain) {
  const OpSchema* s = OpRegistry::global().find(domain, name);
  KILN_CHECK(s, "unknown op ", name);
  return *s;
}

}  // namespace kiln::ir
