//===- lib/ir/CloneModule.cpp - A deep copy of a module --------------------===//
//
// See kiln/ir/CloneModule.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/CloneModule.h"

namespace kiln::ir {

std::unique_ptr<Module> cloneModule(const Module& module) {
  auto copy = std::make_unique<Module>(cloneGraph(module.graph()));
  copy->name = module.name;
  copy->producerName = module.producerName;
  copy->producerVersion = module.producerVersion;
  copy->docString = module.docString;
  copy->irVersion = module.irVersion;
  copy->modelVersion = module.modelVersion;
  copy->opsetImports = module.opsetImports;
  copy->metadataProps = module.metadataProps;
  copy->dimRanges = module.dimRanges;
  copy->stringInputs = module.stringInputs;
  copy->stringOutputs = module.stringOutputs;
  return copy;
}

}  // namespace kiln::ir
