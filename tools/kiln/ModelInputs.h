//===- tools/kiln/ModelInputs.h - A model with its inputs for running ------===//
//
// What `kiln run` and `kiln bench` share: import the model (timed), read the
// inputs given with --input (.npy or ONNX TensorProto .pb; dynamic dims are
// bound from them, which re-imports), and make seeded random data for the
// rest (uniform [-1, 1) for floats, [0, 10) for integers, random words for
// strings); then run the --pipeline passes, if any (timed).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ModelLoader.h"
#include "kiln/kiln.h"
#include "kiln/support/RuntimeValue.h"

namespace kiln::cli {

struct ModelWithInputs {
  std::unique_ptr<ir::Module> module;
  std::vector<RuntimeValue> inputs;  ///< in the order of the graph's inputs
  double importMs = 0;               ///< the final import (with bindings)
  std::optional<double> passesMs;    ///< --pipeline, when given
  std::string pipeline;              ///< the passes run, as printed (--pipeline arch resolved)
};

/// `inputSpecs` are "name=path" strings.
Expected<ModelWithInputs> loadModelWithInputs(const ModelOptions& options, const std::vector<std::string>& inputSpecs,
                                              uint64_t seed);

/// Inputs of a compiled artifact: --input files (.npy or .pb, which must have
/// the compiled types) or seeded random data of each input's type.
Expected<std::vector<Tensor>> artifactInputs(const std::vector<TensorInfo>& infos,
                                             const std::vector<std::string>& inputSpecs, uint64_t seed);

}  // namespace kiln::cli
