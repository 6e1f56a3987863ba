//===- python/src/Inspect.cpp - kiln.inspect and kiln.passes.classify -----===//
//
// What `kiln inspect` and `kiln passes classify` print, as Python values:
// the imported model's interface, op histogram, sizes and structural hash;
// its architecture classes with scores and reasons.
//
//===----------------------------------------------------------------------===//
#include "Inspect.h"

#include <pybind11/stl.h>

#include "Errors.h"
#include "ModelLoader.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/select/ArchitectureClasses.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

std::unique_ptr<ir::Module> importModel(const std::string& path, const std::vector<std::string>& shapes) {
  cli::ModelOptions o;
  o.path = path;
  o.shapes = shapes;
  return take(cli::loadModel(o));
}

py::list values(const std::vector<ir::Value*>& vs) {
  py::list out;
  for (const ir::Value* v : vs) out.append(py::dict(py::arg("name") = v->name(), py::arg("type") = v->type().str()));
  return out;
}

py::dict inspect(const std::string& path, const std::vector<std::string>& shapes) {
  auto module = importModel(path, shapes);
  const ir::Graph& g = module->graph();
  const select::ArchitectureFeatures f = select::computeFeatures(g);
  py::dict opsets;
  for (const auto& [domain, version] : module->opsetImports) opsets[py::str(domain.empty() ? "ai.onnx" : domain)] = version;
  py::dict d;
  d["model"] = path;
  d["producer"] = module->producerName;
  d["opsets"] = opsets;
  d["inputs"] = values(g.inputs());
  d["outputs"] = values(g.outputs());
  d["nodes"] = f.nodes;
  d["parameters"] = f.parameters;
  d["parameter_bytes"] = f.parameterBytes;
  d["ops"] = f.opHistogram;
  d["structural_hash"] = ir::structuralHashHex(g);
  return d;
}

py::dict classify(const std::string& path, const std::vector<std::string>& shapes) {
  auto module = importModel(path, shapes);
  const std::vector<select::ClassScore> scores = select::classify(select::computeFeatures(module->graph()));
  py::list all;
  for (const select::ClassScore& s : scores)
    all.append(py::dict(py::arg("name") = s.name, py::arg("score") = s.score, py::arg("reasons") = s.reasons));
  py::dict d;
  d["classes"] = select::classesOf(scores);
  d["scores"] = all;
  return d;
}

}  // namespace

void registerInspect(py::module_& m) {
  m.def("inspect", &inspect, py::arg("path"), py::arg("shapes"));
  m.def("classify", &classify, py::arg("path"), py::arg("shapes"));
}

}  // namespace kiln::python
