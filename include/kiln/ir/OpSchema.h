//===- kiln/ir/OpSchema.h - The op table: schemas and inference ---*- C++ -*-===//
//
// One OpSchema per supported op: operand and result counts, attributes with
// kinds and defaults, the fusion pattern (TVM's elementwise / broadcast /
// injective / reduction / out-elementwise-fusable / opaque), a docstring, and a
// type-and-shape inference function.
//
// Inference functions are shared by static shape inference (over the IR, with
// constant operands known where they are) and by the reference interpreter (with
// every operand known). They may also propagate small computed values (shape
// arithmetic such as Shape -> Gather -> Concat), so that the Reshape at the end
// of such a chain gets a static shape.
//
// kiln's IR uses each op in its ONNX opset-17 form; the importer rewrites older
// forms (e.g. Slice with attribute starts) into it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/Attribute.h"
#include "kiln/ir/Op.h"
#include "kiln/ir/Type.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

class Graph;
class Node;

/// How an op fuses with its neighbours (the fusion-pattern trait).
enum class FusionPattern {
  Elementwise,      ///< output element i depends only on input element i
  Broadcast,        ///< elementwise with broadcasting
  Injective,        ///< each output element reads one input element (reshape, slice, ...)
  CommReduce,       ///< commutative reduction (sum, max, mean, ...)
  OutEWiseFusable,  ///< complex op whose output can absorb elementwise consumers (conv, matmul)
  Opaque,           ///< not fusable (control flow, data-dependent shapes, ...)
};
const char* fusionPatternName(FusionPattern p);

/// The view of a node that inference functions get.
class InferenceContext {
 public:
  explicit InferenceContext(const Node& node) : node_(node) {}
  virtual ~InferenceContext() = default;

  const Node& node() const { return node_; }
  size_t numInputs() const;
  bool hasInput(size_t i) const;
  virtual const Type& inputType(size_t i) const = 0;
  /// The input's tensor type; an error if it is not a tensor.
  Expected<TensorType> inputTensor(size_t i) const;
  /// The input's value when known (a constant, or propagated); else null.
  virtual const Tensor* inputValue(size_t i) const = 0;
  size_t numOutputs() const;
  virtual void setOutputType(size_t i, Type type) = 0;
  /// Records a computed value for result i (used only for small tensors).
  virtual void setOutputValue(size_t i, Tensor value) {}
  /// True when inputs are concrete values (the interpreter), false for static inference.
  virtual bool isRuntime() const { return false; }
  /// Static inference: sets the subgraph's input types and infers its nodes.
  /// At run time this does nothing (bodies are executed, not inferred).
  virtual Status inferSubgraph(Graph& graph, const std::vector<Type>& inputTypes) { return Status::ok(); }

 private:
  const Node& node_;
};

using InferFn = Status (*)(InferenceContext& ctx);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
  std::optional<Attribute> defaultValue;
};

struct OpSchema {
  std::string domain;  ///< "" for the default ONNX domain
  std::string name;
  Op op{};  ///< its Ops.def entry (set when registered)
  int minInputs = 0;
  int maxInputs = 0;  ///< INT_MAX for variadic
  /// Leading operands that must be present (not omitted); usually minInputs.
  int requiredInputs = 0;
  int minOutputs = 1;
  int maxOutputs = 1;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  std::vector<AttrSpec> attrs;
  FusionPattern pattern = FusionPattern::Opaque;
  InferFn infer = nullptr;
  std::string doc;
  /// Results differ between runs with the same inputs (random ops).
  bool nondeterministic = false;

  const AttrSpec* findAttr(std::string_view attrName) const;
  std::string qualifiedName() const { return domain.empty() ? name : domain + "::" + name; }
};

/// Fluent construction of schemas in the op definition files.
class SchemaBuilder {
 public:
  SchemaBuilder(std::string name, std::string domain = "");
  SchemaBuilder& inputs(int min, int max, std::vector<std::string> names = {});
  SchemaBuilder& outputs(int min, int max, std::vector<std::string> names = {});
  /// Overrides how many leading operands must be present (default: min inputs).
  SchemaBuilder& requiredInputs(int n);
  SchemaBuilder& attr(std::string name, Attribute defaultValue);
  SchemaBuilder& requiredAttr(std::string name, AttrKind kind);
  /// An attribute with no default whose absence means "not given".
  SchemaBuilder& optionalAttr(std::string name, AttrKind kind);
  SchemaBuilder& pattern(FusionPattern p);
  SchemaBuilder& infer(InferFn fn);
  SchemaBuilder& doc(std::string text);
  SchemaBuilder& nondeterministic();
  OpSchema build() { return std::move(schema_); }

 private:
  OpSchema schema_;
};

class OpRegistry {
 public:
  /// The registry with every op kiln supports (built on first use).
  static const OpRegistry& global();

  const OpSchema* find(std::string_view domain, std::string_view name) const;
  /// Every schema, sorted by qualified name.
  std::vector<const OpSchema*> all() const;
  void add(OpSchema schema);

 private:
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> schemas_;
};

/// Registers every op family (explicit list; no static initialisers).
void registerAllOps(OpRegistry& registry);

/// Looks up a default-domain op that must exist (checked); for passes and tests.
const OpSchema& opSchema(std::string_view name, std::string_view domain = "");

}  // namespace kiln::ir
