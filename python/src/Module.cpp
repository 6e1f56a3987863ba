//===- python/src/Module.cpp - The kiln._kiln extension module ------------===//
//
// kiln.compile, kiln.load and kiln.Model over the embedding API (kiln.h) and
// the compile driver the CLI uses. A Model keeps its artifact's bytes (or
// file) for save(). run() converts inputs with the GIL held, runs with it
// released (runs from many threads proceed at once) and wraps the outputs
// without copying them. The Python side (kiln/__init__.py) documents every call.
//
//===----------------------------------------------------------------------===//
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <fstream>

#include "Arrays.h"
#include "CompileDriver.h"
#include "Errors.h"
#include "Inspect.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/support/File.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

class PyModel {
 public:
  PyModel(std::unique_ptr<Model> model, std::string target, std::vector<uint8_t> bytes, std::string path)
      : model_(std::move(model)), target_(std::move(target)), bytes_(std::move(bytes)), path_(std::move(path)) {}

  const Model& model() const { return *model_; }
  const std::string& target() const { return target_; }

  py::dict run(py::object inputs, const std::string& tracePath) const {
    const std::vector<TensorInfo>& specs = model_->inputs();
    std::vector<Tensor> tensors;
    if (py::isinstance<py::dict>(inputs)) {
      py::dict given = inputs;
      for (auto item : given) {
        const std::string name = py::str(item.first);
        if (std::none_of(specs.begin(), specs.end(), [&](const TensorInfo& t) { return t.name == name; }))
          raise(Error(ErrorCode::ExecInput, "the model has no input '" + name + "' (inputs: " + names(specs) + ")"));
      }
      for (const TensorInfo& t : specs) {
        if (!given.contains(t.name)) raise(Error(ErrorCode::ExecInput, "input '" + t.name + "' is not given"));
        tensors.push_back(inputTensor(given[py::str(t.name)], t));
      }
    } else {
      py::list given = py::list(inputs);
      if (given.size() != specs.size())
        raise(Error(ErrorCode::ExecInput, "the model takes " + std::to_string(specs.size()) + " inputs (" + names(specs) +
                                              "); " + std::to_string(given.size()) + " were given"));
      for (size_t i = 0; i < specs.size(); ++i) tensors.push_back(inputTensor(given[i], specs[i]));
    }
    RunTrace trace;
    Expected<std::vector<Tensor>> out = [&] {
      py::gil_scoped_release release;
      return tracePath.empty() ? model_->run(tensors) : model_->run(tensors, trace);
    }();
    std::vector<Tensor> outputs = take(std::move(out));
    if (!tracePath.empty()) take(writeFile(tracePath, chromeTraceJson({trace}, "kiln (Python)")));
    py::dict result;
    for (size_t i = 0; i < outputs.size(); ++i)
      result[py::str(model_->outputs()[i].name)] = outputArray(std::move(outputs[i]), model_->outputs()[i]);
    return result;
  }

  void save(const std::string& path) const {
    if (!bytes_.empty()) {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes_.data()), std::streamsize(bytes_.size()));
      if (!out) raise(Error(ErrorCode::IoError, "cannot write " + path));
      return;
    }
    std::error_code ec;
    if (!std::filesystem::equivalent(path_, path, ec))
      std::filesystem::copy_file(path_, path, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) raise(Error(ErrorCode::IoError, "cannot copy " + path_ + " to " + path + ": " + ec.message()));
  }

 private:
  static std::string names(const std::vector<TensorInfo>& specs) {
    std::string out;
    for (const TensorInfo& t : specs) out += (out.empty() ? "" : ", ") + t.name;
    return out;
  }

  std::unique_ptr<Model> model_;
  std::string target_;
  std::vector<uint8_t> bytes_;  ///< a compiled model's artifact
  std::string path_;            ///< a loaded model's file
};

/// One input's or output's description, as kiln.TensorSpec takes it.
py::dict specOf(const TensorInfo& t) {
  auto dims = [](const Dims& d) {
    py::list out;
    for (int64_t x : d) out.append(x < 0 ? py::object(py::none()) : py::object(py::int_(x)));
    return py::tuple(out);
  };
  py::dict d;
  d["name"] = t.name;
  d["dtype"] = t.strings ? std::string("str") : numpyName(t.dtype).empty() ? std::string(dtypeName(t.dtype)) : numpyName(t.dtype);
  d["shape"] = t.rankKnown ? py::object(dims(t.dims)) : py::object(py::none());
  d["min_shape"] = t.hasDynamicDims() ? py::object(dims(t.minDims)) : py::object(py::none());
  d["opt_shape"] = t.hasDynamicDims() ? py::object(dims(t.optDims)) : py::object(py::none());
  d["max_shape"] = t.hasDynamicDims() ? py::object(dims(t.maxDims)) : py::object(py::none());
  return d;
}

std::string targetOf(const Model& m) { return m.compiledFor().rfind("sm_", 0) == 0 ? "cuda" : "cpu"; }

std::shared_ptr<PyModel> load(const std::string& path) {
  auto model = take(Model::load(path));
  std::string target = targetOf(*model);
  return std::make_shared<PyModel>(std::move(model), target, std::vector<uint8_t>{}, path);
}

std::shared_ptr<PyModel> compile(const std::string& path, const std::string& target, const std::vector<std::string>& shapes,
                                 int optLevel, const std::string& pipeline, const std::string& precision,
                                 const std::string& tuningDb, const std::string& fusionPlan, bool quiet) {
  cli::CompileOptions o;
  o.model.path = path;
  o.model.shapes = shapes;
  o.model.optLevel = pipeline.empty() ? optLevel : -1;
  o.model.pipeline = pipeline;
  o.model.precision = precision;
  o.model.target = cli::isCudaTarget(target) ? "cuda" : target;
  o.target = target;
  o.tuningDb = tuningDb;
  o.fusionPlan = fusionPlan;
  o.quiet = quiet;
  std::vector<uint8_t> bytes;
  {
    py::gil_scoped_release release;
    auto compiled = cli::compileModel(o, [&](const std::string& msg) {
      if (!quiet) {
        py::gil_scoped_acquire gil;
        py::print("kiln: " + msg, py::arg("file") = py::module_::import("sys").attr("stderr"));
      }
    });
    if (!compiled) raise(compiled.error());
    bytes = runtime::serializeExecutable(*compiled->lowered.executable);
  }
  auto model = take(Model::loadFromMemory(bytes.data(), bytes.size(), path));
  return std::make_shared<PyModel>(std::move(model), cli::isCudaTarget(target) ? "cuda" : "cpu", std::move(bytes), "");
}

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's native core; use the kiln package, which documents every call.";
  m.attr("__version__") = KILN_VERSION;
  registerErrors(m);
  registerInspect(m);
  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model")
      .def("run", &PyModel::run, py::arg("inputs"), py::arg("trace") = "")
      .def("save", &PyModel::save, py::arg("path"))
      .def_property_readonly("target", &PyModel::target)
      .def_property_readonly("compiled_for", [](const PyModel& p) { return p.model().compiledFor(); })
      .def_property_readonly("scratch_bytes", [](const PyModel& p) { return p.model().scratchBytes(); })
      .def_property_readonly("input_specs", [](const PyModel& p) {
        py::list out;
        for (const TensorInfo& t : p.model().inputs()) out.append(specOf(t));
        return out;
      })
      .def_property_readonly("output_specs", [](const PyModel& p) {
        py::list out;
        for (const TensorInfo& t : p.model().outputs()) out.append(specOf(t));
        return out;
      });
  m.def("load", &load, py::arg("path"));
  m.def("compile", &compile, py::arg("path"), py::arg("target"), py::arg("shapes"), py::arg("opt_level"), py::arg("pipeline"),
        py::arg("precision"), py::arg("tuning_db"), py::arg("fusion_plan"), py::arg("quiet"));
  m.def("set_threads", &Model::setThreads, py::arg("threads"));
  m.def("error_code_name", [](int code) { return std::string(errorCodeName(ErrorCode(code))); });
}

}  // namespace kiln::python
