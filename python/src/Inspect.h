//===- python/src/Inspect.h - kiln.inspect and kiln.passes.classify -------===//
//
// Registers _kiln.inspect(path, shapes) and _kiln.classify(path, shapes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::python {

void registerInspect(pybind11::module_& m);

}  // namespace kiln::python
