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
#include "kiln/support/Status.h"

namespace kiln::onnx {

struct NodeDraft {
  std::string opType;
  std::string domain;
  std::string name;
  std::vector<ir::Value*> inputs;
  std::vector<std::pair<std::string, ir::Attribute>> attrs;
  std::vector<std::string> outputs;

  const ir::Attribute* attr(const std::string& n) const;
  /// Removes an attribute and returns it (nullopt if absent).
  std::optional<ir::Attribute> take(const std::string& n);
  /// Removes an attribute that must be of `kind` (an error otherwise; the
  /// schema check comes after normalisation, so rewrites check kinds here).
  Expected<std::optional<ir::Attribute>> takeAs(const std::string& n, ir::AttrKind kind);
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
};

/// Rewrites `draft` (of default-domain opset `opset`) into its opset-17 form.
Status normalizeDraft(NodeDraft& draft, int64_t opset, DraftBuilder& builder);

}  // namespace kiln::onnx
