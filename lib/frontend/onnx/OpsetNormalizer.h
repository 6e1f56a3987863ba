//===- lib/frontend/onnx/OpsetNormalizer.h - Legacy op forms -> opset 17 --===//
//
// kiln's IR holds each op in its opset-17 form. The importer describes each
// ONNX node as a NodeDraft; normalizeDraft() rewrites drafts of older opsets
// (attributes that became inputs, renamed or re-specified ops) into that form,
// creating helper nodes (constants, Flatten, Shape, ...) through a builder.
// Operand types are known when a draft is normalised.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/support/NarrowTypes.h"
#include "kiln/support/Status.h"

namespace kiln::onnx {

struct NodeDraft {
  std::string opType;
  std::string domain;
  std::string name;
  std::vector<ir::Value*> inputs;
  std::vector<std::pair<std::string, ir::Attribute>> attrs;
  std::vector<std::string> outputs;
  /// Outputs a rewrite computed with helper nodes (ONNX name, value); the
  /// importer gives each its name through an Identity.
  std::vector<std::pair<std::string, ir::Value*>> computedOutputs;

  const ir::Attribute* attr(const std::string& n) const;
  /// Removes an attribute and returns it (nullopt if absent).
  std::optional<ir::Attribute> take(const std::string& n);
  /// Removes an attribute that must be of `kind` (an error otherwise; the
  /// schema check comes after normalisation, so rewrites check kinds here).
  Expected<std::optional<ir::Attribute>> takeAs(const std::string& n, ir::AttrKind kind);
  /// Removes a float (int) attribute: its value, `dflt` when absent, an error when of another kind.
  Expected<float> takeFloat(const std::string& n, float dflt);
  Expected<int64_t> takeInt(const std::string& n, int64_t dflt);
  /// The attribute if present and of `kind`, an error if of another kind.
  Expected<const ir::Attribute*> attrAs(const std::string& n, ir::AttrKind kind) const;
  void set(const std::string& n, ir::Attribute a);
};

/// Creates typed helper nodes in the graph being imported, before the draft.
class DraftBuilder {
 public:
  virtual ~DraftBuilder() = default;
  virtual Expected<ir::Value*> constant(const Tensor& value) = 0;
  /// A single-result node; returns its result.
  virtual Expected<ir::Value*> node(const std::string& opType, std::vector<ir::Value*> inputs,
                                    std::vector<std::pair<std::string, ir::Attribute>> attrs) = 0;
  /// The value of `v` when it is a constant or follows from constants; else null.
  virtual const Tensor* knownValue(const ir::Value* v) const = 0;
  /// The narrow type (float8, 4-bit) the model gives `v`, which kiln holds on
  /// its carrier; nullopt for a value of a kiln type.
  virtual std::optional<NarrowType> narrowType(const ir::Value* v) const = 0;
  /// Whether the model gives `v` the STRING type (kiln holds it as i64 ids
  /// into the string pool).
  virtual bool isString(const ir::Value* v) const = 0;
};

/// Rewrites `draft` (of default-domain opset `opset`) into its opset-17 form.
Status normalizeDraft(NodeDraft& draft, int64_t opset, DraftBuilder& builder);

/// Ensures the draft has at least `n` input slots.
void growInputs(NodeDraft& d, size_t n);
/// A scalar constant of `dtype` holding `v`.
Tensor scalarOf(DType dtype, double v);
/// The element type of input `i` (an error when it is absent or unknown).
Expected<DType> inputDType(const NodeDraft& d, size_t i);
/// Input `i` as integers; it must be known at import (a constant or computed from constants).
Expected<std::vector<int64_t>> knownInputInts(const NodeDraft& d, size_t i, const DraftBuilder& b, const char* what);
/// The static dims of input `i` (an error naming `why` when its shape is not static).
Expected<Dims> staticInputDims(const NodeDraft& d, size_t i, const char* why);
/// The rank of input `i` (an error when it is absent or unknown).
Expected<int64_t> inputRank(const NodeDraft& d, size_t i);
/// `axes` with negative entries counted from the back of `rank` (an error when out of range).
Expected<std::vector<int64_t>> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank);
/// Whether input slot `i` holds a value (absent optional inputs are null).
bool hasInput(const NodeDraft& d, size_t i);
/// An error unless the first `n` input slots all hold values.
Status requireInputs(const NodeDraft& d, size_t n);

}  // namespace kiln::onnx
