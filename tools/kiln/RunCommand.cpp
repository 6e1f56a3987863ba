//===- tools/kiln/RunCommand.cpp - `kiln run` -------------------------------===//
//
// Runs a model on the reference interpreter. Inputs come from .npy or ONNX
// TensorProto (.pb) files (dynamic dims are bound from them) or are random
// (seeded: uniform [-1, 1) for floats, [0, 10) for integers). Outputs are
// summarised on stdout and, with --output-dir, written as DIR/<name>.npy with
// characters outside [A-Za-z0-9_.-] replaced by '_'.
//
//===----------------------------------------------------------------------===//
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/support/File.h"
#include "kiln/support/Npy.h"

namespace kiln::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> inputs;  ///< name=path
  std::string outputDir;
  uint64_t seed = 0;
  int printLimit = 8;
};

bool endsWith(const std::string& s, const char* suffix) {
  std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

Expected<RuntimeValue> readInputFile(const std::string& path, const ir::Type& type) {
  if (endsWith(path, ".npy")) {
    KILN_ASSIGN(Tensor t, readNpy(path));
    return RuntimeValue(t);
  }
  if (endsWith(path, ".pb")) return onnx::readOnnxValueFile(path, type);
  return Error(ErrorCode::InvalidArgument, "input file '" + path + "' must be .npy or .pb");
}

Expected<Tensor> randomTensor(const ir::Value& input, uint64_t seed) {
  if (!input.type().isTensor())
    return Error(ErrorCode::ExecInput, "input '" + input.name() + "' is a " + input.type().str() +
                                           "; give it with --input " + input.name() + "=file.pb");
  const ir::TensorType& t = input.tensorType();
  if (!t.hasRank())
    return Error(ErrorCode::ShapeBinding, "input '" + input.name() + "' has unknown rank; give --input " +
                                              input.name() + "=file.npy");
  Dims dims = t.dims();
  if (!t.isStatic()) {
    for (int64_t& d : dims)
      if (d < 0) d = 1;
    std::cerr << "kiln: note: input '" << input.name() << "' is " << t.str() << "; random data uses dims "
              << dimsToString(dims) << " (bind them with --shape " << input.name() << ":...)\n";
  }
  Tensor out = Tensor::zeros(t.dtype(), dims);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  dispatchDType(t.dtype(), [&]<class T>() {
    T* p = out.mutableData<T>();
    for (int64_t i = 0; i < out.numElements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = integer(gen) % 2;
      else if constexpr (isFloatLike<T>) p[i] = T(float(real(gen)));
      else p[i] = T(integer(gen));
    }
  });
  return out;
}

void printTensor(const std::string& name, const Tensor& t, int limit) {
  std::vector<double> v = t.toDoubles();
  std::cout << "  " << name << ": " << t.typeString();
  if (!v.empty()) {
    double lo = v[0], hi = v[0], sum = 0;
    for (double x : v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    std::cout << "  min " << lo << "  max " << hi << "  mean " << sum / double(v.size());
  }
  std::cout << "\n    [";
  for (size_t i = 0; i < v.size() && int(i) < limit; ++i) std::cout << (i ? ", " : "") << std::setprecision(6) << v[i];
  if (int(v.size()) > limit) std::cout << ", ...";
  std::cout << "]\n";
}

Status writeOutput(const std::string& dir, const std::string& name, const RuntimeValue& v, std::vector<std::string>& written) {
  std::string base = dir + "/" + sanitizeFileName(name);
  if (v.isTensor()) {
    KILN_TRY(writeNpy(base + ".npy", v.tensor()));
    written.push_back(base + ".npy");
  } else if (v.isSequence()) {
    for (size_t i = 0; i < v.elements().size(); ++i) {
      KILN_TRY(writeNpy(base + "." + std::to_string(i) + ".npy", v.elements()[i]));
      written.push_back(base + "." + std::to_string(i) + ".npy");
    }
  } else if (v.hasValue()) {
    return writeOutput(dir, name, v.value(), written);
  }
  return Status::ok();
}

int runModel(const RunOptions& o) {
  std::map<std::string, std::string> files;
  for (const auto& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return reportError(Error(ErrorCode::InvalidArgument, "--input '" + spec + "' must look like name=file.npy"));
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto module = loadModel(o.model);
  if (!module) return reportError(module.error());
  for (const auto& [name, path] : files) {
    bool known = false;
    for (ir::Value* in : (*module)->graph().inputs()) known |= in->name() == name;
    if (!known) return reportError(Error(ErrorCode::ExecInput, "--input names '" + name + "', which is not a model input"));
  }
  // Read every input file once; dynamic dims bind from them (import again).
  std::map<std::string, RuntimeValue> given;
  std::vector<std::string> bindings;
  for (ir::Value* in : (*module)->graph().inputs()) {
    auto it = files.find(in->name());
    if (it == files.end()) continue;
    auto v = readInputFile(it->second, in->type());
    if (!v) return reportError(v.error());
    if (v->isTensor() && in->type().isTensor() && !in->tensorType().isStatic())
      bindings.push_back(in->name() + ":" + dimsToString(v->tensor().dims()));
    given[in->name()] = std::move(*v);
  }
  if (!bindings.empty()) {
    module = loadModel(o.model, bindings);
    if (!module) return reportError(module.error());
  }
  const ir::Graph& g = (*module)->graph();
  auto t1 = std::chrono::steady_clock::now();
  std::vector<RuntimeValue> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* in = g.inputs()[i];
    if (auto it = given.find(in->name()); it != given.end()) {
      inputs.push_back(it->second);
      continue;
    }
    auto t = randomTensor(*in, o.seed + i);
    if (!t) return reportError(t.error());
    inputs.push_back(*t);
  }
  runtime::Interpreter interp(g, {.seed = o.seed});
  auto outs = interp.run(inputs);
  if (!outs) return reportError(outs.error());
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::cout << "ran " << o.model.path << " on the reference interpreter (import " << std::fixed << std::setprecision(1)
            << ms(t0, t1) << " ms, run " << ms(t1, t2) << " ms)\n" << std::defaultfloat << std::setprecision(6);
  std::cout << "outputs:\n";
  for (size_t i = 0; i < outs->size(); ++i) {
    const RuntimeValue& v = (*outs)[i];
    const std::string& name = g.outputs()[i]->name();
    if (v.isTensor()) printTensor(name, v.tensor(), o.printLimit);
    else std::cout << "  " << name << ": " << v.describe() << "\n";
  }
  if (!o.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.outputDir, ec);
    if (ec) return reportError(Error(ErrorCode::IoError, "cannot create '" + o.outputDir + "': " + ec.message()));
    std::vector<std::string> written;
    for (size_t i = 0; i < outs->size(); ++i) {
      Status s = writeOutput(o.outputDir, g.outputs()[i]->name(), (*outs)[i], written);
      if (!s.isOk()) return reportError(s.error());
    }
    for (const auto& w : written) std::cout << "wrote " << w << "\n";
  }
  return 0;
}

}  // namespace

void addRunCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("run", "Run a model on the reference interpreter");
  auto o = std::make_shared<RunOptions>();
  addModelOptions(*cmd, o->model, true);
  cmd->add_option("--input", o->inputs, "An input as name=file.npy or name=file.pb (repeatable); others are random");
  cmd->add_option("--output-dir", o->outputDir, "Write each output to DIR/<output name>.npy");
  cmd->add_option("--seed", o->seed, "Seed for random inputs and random ops")->default_val(0);
  cmd->add_option("--print-limit", o->printLimit, "Values printed per output")->default_val(8);
  cmd->callback([=, &exitCode] { exitCode = runModel(*o); });
}

}  // namespace kiln::cli
