//===- tools/kiln/InspectCommand.cpp - `kiln inspect` ----------------------===//
//
// Summarises a model: inputs and outputs with types, op histogram, parameter
// count and bytes, node count, opsets, producer and structural hash; `--ir`
// prints the text IR (weights elided), `--json` the summary as JSON.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/select/ArchitectureFeatures.h"
#include "kiln/support/Strings.h"

namespace kiln::cli {
namespace {

std::string humanBytes(int64_t b) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (b >= (1 << 20)) os << double(b) / double(1 << 20) << " MiB";
  else if (b >= 1024) os << double(b) / 1024.0 << " KiB";
  else os << b << " B";
  return os.str();
}

int runInspect(const ModelOptions& options, bool printIr, bool asJson) {
  auto module = loadModel(options);
  if (!module) return reportError(module.error());
  const ir::Module& m = **module;
  const ir::Graph& g = m.graph();
  const select::ArchitectureFeatures s = select::computeFeatures(g);  // counts nodes, constants, parameters, ops
  std::vector<std::pair<std::string, int64_t>> ops(s.opHistogram.begin(), s.opHistogram.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (asJson) {
    nlohmann::json j;
    j["model"] = options.path;
    j["producer"] = m.producerName + (m.producerVersion.empty() ? "" : " " + m.producerVersion);
    for (const auto& [domain, v] : m.opsetImports) j["opsets"][domain.empty() ? "ai.onnx" : domain] = v;
    for (ir::Value* in : g.inputs()) j["inputs"].push_back({{"name", in->name()}, {"type", in->type().str()}});
    for (ir::Value* out : g.outputs()) j["outputs"].push_back({{"name", out->name()}, {"type", out->type().str()}});
    for (const auto& [symbol, r] : m.dimRanges)
      j["dynamic_dims"][symbol] = {{"min", r.min}, {"opt", r.opt}, {"max", r.max}};
    j["nodes"] = s.nodes;
    j["parameters"] = s.parameters;
    j["parameter_bytes"] = s.parameterBytes;
    for (const auto& [op, count] : ops) j["ops"][op] = count;
    j["structural_hash"] = ir::structuralHashHex(g);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "model:      " << options.path << "\n";
    if (!m.producerName.empty()) std::cout << "producer:   " << printable(m.producerName) << " " << printable(m.producerVersion) << "\n";
    std::cout << "opsets:    ";
    for (const auto& [domain, v] : m.opsetImports) std::cout << " " << (domain.empty() ? "ai.onnx" : printable(domain)) << "=" << v;
    std::cout << "\ninputs:\n";
    for (ir::Value* in : g.inputs()) std::cout << "  " << printable(in->name()) << ": " << in->type().str() << "\n";
    std::cout << "outputs:\n";
    for (ir::Value* out : g.outputs()) std::cout << "  " << printable(out->name()) << ": " << out->type().str() << "\n";
    if (!m.dimRanges.empty()) std::cout << "dynamic dims:\n";
    for (const auto& [symbol, r] : m.dimRanges)
      std::cout << "  " << printable(symbol) << ": " << r.str() << "\n";
    std::cout << "nodes:      " << s.nodes << " (plus " << s.constants << " constants)\n";
    std::cout << "parameters: " << s.parameters << " (" << humanBytes(s.parameterBytes) << ")\n";
    std::cout << "hash:       " << ir::structuralHashHex(g) << "\n";
    std::cout << "ops:\n";
    for (const auto& [op, count] : ops) std::cout << "  " << std::setw(6) << count << "  " << op << "\n";
  }
  if (printIr) std::cout << "\n" << ir::printModule(m, {.elideResources = true});
  return 0;
}

}  // namespace

void addInspectCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("inspect", "Summarise a model: inputs, outputs, ops, parameters");
  auto options = std::make_shared<ModelOptions>();
  auto printIr = std::make_shared<bool>(false), asJson = std::make_shared<bool>(false);
  addModelOptions(*cmd, *options, false);
  addShapeRangeOptions(*cmd, *options);
  cmd->add_flag("--ir", *printIr, "Also print the text IR (weights elided)");
  cmd->add_flag("--json", *asJson, "Print the summary as JSON");
  cmd->callback([=, &exitCode] { exitCode = runInspect(*options, *printIr, *asJson); });
}

}  // namespace kiln::cli
