//===- kiln/ir/CloneModule.h - A deep copy of a module -------------*- C++ -*-===//
//
// A module's graph copied with its value names unchanged (a root graph has
// its own name table), with every piece of metadata export and compilation
// read: opsets, dim ranges, string inputs and outputs. Weights share their
// buffers with the original.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>

#include "kiln/ir/Module.h"

namespace kiln::ir {

std::unique_ptr<Module> cloneModule(const Module& module);

}  // namespace kiln::ir
