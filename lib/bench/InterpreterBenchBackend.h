//===- lib/bench/InterpreterBenchBackend.h - Backend: reference interpreter -----===//
//
// Runs the imported graph as is on the reference interpreter: no passes, no
// code generation, one thread. The baseline every other backend is compared
// with.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/bench/Backend.h"
#include "kiln/runtime/Interpreter.h"

namespace kiln::bench {

class InterpreterBackend final : public Backend {
 public:
  explicit InterpreterBackend(const BackendOptions& options) : options_(options) {}
  std::string name() const override { return "interpreter"; }
  int threads() const override { return 1; }
  Status prepare(std::unique_ptr<ir::Module> module, CompilePhases& phases) override {
    module_ = std::move(module);
    interpreter_ = std::make_unique<runtime::Interpreter>(module_->graph(), runtime::InterpreterOptions{.seed = options_.seed});
    return Status::ok();
  }
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs) override {
    if (!interpreter_) return Error(ErrorCode::Internal, "interpreter backend: run() before prepare()");
    return interpreter_->run(inputs);
  }

 private:
  BackendOptions options_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<runtime::Interpreter> interpreter_;
};

}  // namespace kiln::bench
