//===- lib/bench/Backends.cpp - The backend registry -----------------------===//
//
// Maps backend names to implementations. Add a target here and `kiln bench`,
// `kiln run --backend` and bench/compare accept it. Today: the reference
// interpreter, the CPU code generator ("cpu") and the CUDA one ("cuda", for
// the GPU present).
//
//===----------------------------------------------------------------------===//
#include "CpuBenchBackend.h"
#include "CudaBenchBackend.h"
#include "InterpreterBenchBackend.h"
#include "kiln/bench/Backend.h"
#include "kiln/support/Strings.h"

namespace kiln::bench {

Expected<std::vector<Tensor>> tensorInputs(const std::vector<RuntimeValue>& inputs, const std::string& backend) {
  std::vector<Tensor> tensors;
  for (const RuntimeValue& v : inputs) {
    if (!v.isTensor()) return Error(ErrorCode::ExecInput, backend + " backend takes tensor inputs only");
    tensors.push_back(v.tensor());
  }
  return tensors;
}

std::vector<RuntimeValue> tensorValues(std::vector<Tensor> tensors) {
  std::vector<RuntimeValue> values;
  for (Tensor& t : tensors) values.emplace_back(std::move(t));
  return values;
}

std::vector<std::string> backendNames() { return {"interpreter", "cpu", "cuda"}; }

Expected<std::unique_ptr<Backend>> createBackend(const std::string& name, const BackendOptions& options) {
  if (name == "interpreter") {
    if (options.threads > 1)
      return Error(ErrorCode::InvalidArgument,
                   "backend 'interpreter' runs on one thread; --threads " + std::to_string(options.threads) +
                       " cannot be honoured");
    return std::unique_ptr<Backend>(new InterpreterBackend(options));
  }
  if (name == "cpu") return std::unique_ptr<Backend>(new CpuCodegenBackend(options));
  if (name == "cuda") {
    if (options.threads > 1)
      return Error(ErrorCode::InvalidArgument, "backend 'cuda' runs on the GPU; --threads " + std::to_string(options.threads) +
                                                   " does not apply");
    return std::unique_ptr<Backend>(new CudaCodegenBackend(options));
  }
  return Error(ErrorCode::InvalidArgument,
               "unknown backend '" + name + "' (known: " + joinStrings(backendNames(), ", ") + ")");
}

}  // namespace kiln::bench
