//===- tools/kiln/ModelInputs.cpp - Reading and generating model inputs ----===//
//
// Input files are read once; when they (or random inputs, whose unknown dims
// become 1) bind dynamic dims, the model is imported again with those
// bindings so that static inference and code generation see them. A model
// imported with shape ranges keeps them: random inputs take each dynamic
// dim's opt value, and files of any shape in the ranges are used as they are.
//
//===----------------------------------------------------------------------===//
#include "ModelInputs.h"

#include <iostream>
#include <map>
#include <random>

#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/support/Npy.h"
#include "kiln/support/StringPool.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

Expected<RuntimeValue> readInputFile(const std::string& path, const ir::Type& type) {
  if (path.ends_with(".npy")) {
    KILN_ASSIGN(Tensor t, readNpy(path));
    return RuntimeValue(t);
  }
  if (path.ends_with(".pb")) return onnx::readOnnxValueFile(path, type);
  return Error(ErrorCode::InvalidArgument, "input file '" + path + "' must be .npy or .pb");
}

/// Seeded random data: uniform [-1, 1) for floats, [0, 10) for integers, 0/1 for bools.
Tensor randomData(DType dtype, const Dims& dims, uint64_t seed) {
  Tensor out = Tensor::zeros(dtype, dims);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  dispatchDType(dtype, [&]<class T>() {
    T* p = out.mutableData<T>();
    for (int64_t i = 0; i < out.numElements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = integer(gen) % 2;
      else if constexpr (isFloatLike<T>) p[i] = T(float(real(gen)));
      else p[i] = T(integer(gen));
    }
  });
  return out;
}

/// A ranged input's dims at the opt values of its dynamic dims.
Expected<Dims> optDims(const ir::TensorType& t, const ir::DimRanges& ranges) {
  std::map<std::string, int64_t> opt;
  for (const auto& [symbol, r] : ranges) opt[symbol] = r.opt;
  Dims dims = t.dims();
  for (int64_t i = 0; i < t.rank(); ++i) {
    std::optional<DimExpr> e = t.dim(i) < 0 ? t.dimExpr(i) : std::nullopt;
    if (!e) continue;
    KILN_ASSIGN(dims[size_t(i)], e->evaluate(opt));
  }
  return dims;
}

/// Seeded random input data: randomData, or for a string input random words
/// (one to eight lowercase letters).
Expected<Tensor> randomInput(DType dtype, const Dims& dims, bool strings, uint64_t seed) {
  if (!strings) return randomData(dtype, dims, seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> words(size_t(numElements(dims)));
  for (std::string& w : words) {
    w.resize(1 + rng() % 8);
    for (char& c : w) c = char('a' + rng() % 26);
  }
  return stringTensor(dims, words);
}

Expected<Tensor> randomTensor(const ir::Value& input, bool strings, uint64_t seed) {
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
    std::cerr << "kiln: note: input '" << printable(input.name()) << "' is " << t.str() << "; random data uses dims "
              << dimsToString(dims) << " (bind them with --shape " << printable(input.name()) << ":...)\n";
  }
  return randomInput(t.dtype(), dims, strings, seed);
}

}  // namespace

Expected<ModelWithInputs> loadModelWithInputs(const ModelOptions& options, const std::vector<std::string>& inputSpecs,
                                              uint64_t seed) {
  std::map<std::string, std::string> files;
  for (const auto& spec : inputSpecs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error(ErrorCode::InvalidArgument, "--input '" + spec + "' must look like name=file.npy");
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  ModelWithInputs result;
  Stopwatch importTime;
  KILN_ASSIGN(result.module, loadModel(options));
  result.importMs = importTime.elapsedMs();
  for (const auto& [name, path] : files) {
    bool known = false;
    for (ir::Value* in : result.module->graph().inputs()) known |= in->name() == name;
    if (!known) return Error(ErrorCode::ExecInput, "--input names '" + name + "', which is not a model input");
  }
  std::map<std::string, RuntimeValue> given;
  std::vector<std::string> bindings;
  const bool ranged = !result.module->dimRanges.empty();  // dynamic dims stay dynamic: no rebinding
  for (ir::Value* in : result.module->graph().inputs()) {
    auto it = files.find(in->name());
    if (it == files.end()) {
      if (ranged) continue;
      // Random data binds unknown dims to 1, in the graph too (code generation needs static shapes).
      if (in->type().isTensor() && in->tensorType().hasRank() && !in->tensorType().isStatic()) {
        Dims dims = in->tensorType().dims();
        for (int64_t& d : dims)
          if (d < 0) d = 1;
        bindings.push_back(in->name() + ":" + dimsToString(dims));
        std::cerr << "kiln: note: input '" << printable(in->name()) << "' is " << in->tensorType().str()
                  << "; random data uses dims " << dimsToString(dims) << " (bind them with --shape " << printable(in->name())
                  << ":...)\n";
      }
      continue;
    }
    KILN_ASSIGN(RuntimeValue v, readInputFile(it->second, in->type()));
    if (v.isTensor() && in->type().isTensor() && !in->tensorType().isStatic() && !ranged)
      bindings.push_back(in->name() + ":" + dimsToString(v.tensor().dims()));
    given[in->name()] = std::move(v);
  }
  if (!bindings.empty()) {
    importTime.restart();
    KILN_ASSIGN(result.module, loadModel(options, bindings));
    result.importMs = importTime.elapsedMs();
  }
  KILN_ASSIGN(passes::PassReport report, applyPipeline(*result.module, options));
  result.passesMs = report.totalMs;
  result.pipeline = report.pipeline;
  const ir::Graph& g = result.module->graph();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* in = g.inputs()[i];
    if (auto it = given.find(in->name()); it != given.end()) {
      result.inputs.push_back(it->second);
      continue;
    }
    const bool strings = result.module->stringInputs.count(in->name()) != 0;
    if (ranged && in->type().isTensor() && in->tensorType().hasRank()) {
      KILN_ASSIGN(Dims dims, optDims(in->tensorType(), result.module->dimRanges));
      KILN_ASSIGN(Tensor t, randomInput(in->tensorType().dtype(), dims, strings, seed + i));
      result.inputs.push_back(RuntimeValue(std::move(t)));
      continue;
    }
    KILN_ASSIGN(Tensor t, randomTensor(*in, strings, seed + i));
    result.inputs.push_back(RuntimeValue(std::move(t)));
  }
  return result;
}

Expected<std::vector<Tensor>> artifactInputs(const std::vector<TensorInfo>& infos,
                                             const std::vector<std::string>& inputSpecs, uint64_t seed) {
  std::map<std::string, std::string> files;
  for (const auto& spec : inputSpecs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error(ErrorCode::InvalidArgument, "--input '" + spec + "' must look like name=file.npy");
    bool known = false;
    for (const TensorInfo& t : infos) known |= t.name == spec.substr(0, eq);
    if (!known) return Error(ErrorCode::ExecInput, "--input names '" + spec.substr(0, eq) + "', which is not a model input");
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorInfo& t = infos[i];
    if (auto it = files.find(t.name); it != files.end()) {
      KILN_ASSIGN(RuntimeValue v, readInputFile(it->second, ir::Type(ir::TensorType(t.dtype, t.dims))));
      if (!v.isTensor()) return Error(ErrorCode::ExecInput, "input '" + t.name + "' must be a tensor");
      inputs.push_back(v.tensor());
    } else {
      KILN_ASSIGN(Tensor random, randomInput(t.dtype, t.optDims, t.strings, seed + i));  // a dynamic dim at its opt value
      inputs.push_back(std::move(random));
    }
  }
  return inputs;
}

}  // namespace kiln::cli
