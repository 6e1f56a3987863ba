//===- lib/runtime/core/HostProgram.cpp - Running a host step --------------===//
//
// See HostProgram.h. Errors from the reference kernels keep their node and
// gain the host step's name.
//
//===----------------------------------------------------------------------===//
#include "HostProgram.h"

#include "kiln/ir/Parser.h"

namespace kiln::runtime {

Expected<std::unique_ptr<HostProgram>> HostProgram::create(const HostGraph& graph) {
  Expected<std::unique_ptr<ir::Module>> module = ir::parseModule(graph.text, graph.name);
  if (!module) {
    Error e = std::move(module).error();
    return Error(ErrorCode::ArtifactCorrupt, "host step " + graph.name + " does not parse: " + e.str());
  }
  const ir::Graph& g = (*module)->graph();
  if (g.inputs().size() != graph.numInputs || g.outputs().size() != graph.numOutputs)
    return Error(ErrorCode::ArtifactCorrupt, "host step " + graph.name + " has " + std::to_string(g.inputs().size()) +
                                                 " inputs and " + std::to_string(g.outputs().size()) + " outputs, its step " +
                                                 std::to_string(graph.numInputs) + " and " + std::to_string(graph.numOutputs));
  std::unique_ptr<HostProgram> p(new HostProgram);
  p->name_ = graph.name;
  p->module_ = std::move(*module);
  p->interpreter_ = std::make_unique<Interpreter>(p->module_->graph());
  return p;
}

Expected<std::vector<Tensor>> HostProgram::run(std::vector<Tensor> inputs) const {
  std::vector<RuntimeValue> values(inputs.begin(), inputs.end());
  Expected<std::vector<RuntimeValue>> results = interpreter_->run(values);
  if (!results) {
    Error e = std::move(results).error();
    return e.withContext("host step " + name_);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!(*results)[i].isTensor())
      return Error(ErrorCode::ExecFailure, "host step " + name_ + ": result " + std::to_string(i) + " is a " +
                                               (*results)[i].describe() + ", not a tensor");
    out.push_back((*results)[i].tensor());
  }
  return out;
}

}  // namespace kiln::runtime
