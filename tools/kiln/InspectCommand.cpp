//===- tools/kiln/InspectCommand.cpp - `kiln inspect` ----------------------===//
//
// Summarises a model: inputs and outputs with types, op histogram, parameter
// count and bytes, node count, opsets, producer and structural hash; `--ir`
// prints the text IR (weights elided), `--json` the summary as JSON, `--dot`
// writes the graph as Graphviz DOT. A .kiln
// artifact is summarised from its file (no device needed): target, inputs
// and outputs with the shape ranges it serves, steps and memory.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/ir/GraphDot.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/select/ArchitectureFeatures.h"
#include "kiln/support/File.h"
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

/// A buffer's dims as a run sees them: each dim a number or its DimExpr ("f32[batch,3,64,64]").
std::string runTimeType(const runtime::BufferSpec& b) {
  std::string out = std::string(dtypeName(b.dtype)) + "[";
  for (size_t i = 0; i < b.dims.size(); ++i) {
    if (i) out += ",";
    if (i >= b.shape.size() || b.shape[i].constant()) {
      out += std::to_string(b.dims[i]);
      continue;
    }
    const std::string e = b.shape[i].str();  // a bare symbol, or a formula in parentheses as types print it
    out += b.shape[i].symbols().size() == 1 && e == *b.shape[i].symbols().begin() ? e : "(" + e + ")";
  }
  return out + "]";
}

/// `kiln inspect model.kiln`: what the artifact serves, read from its file.
int inspectArtifact(const std::string& path, bool asJson) {
  auto exe = runtime::loadArtifact(path);
  if (!exe) return reportError(exe.error());
  std::map<runtime::StepKind, size_t> steps;
  for (const runtime::KernelStep& s : exe->steps) ++steps[s.kind];
  if (asJson) {
    nlohmann::json j;
    j["artifact"] = path;
    j["target"] = exe->target;
    j["compiled_for"] = exe->cpu;
    for (uint32_t id : exe->inputs) j["inputs"].push_back({{"name", exe->buffers[id].name}, {"type", runTimeType(exe->buffers[id])}});
    for (uint32_t id : exe->outputs) j["outputs"].push_back({{"name", exe->buffers[id].name}, {"type", runTimeType(exe->buffers[id])}});
    for (const runtime::DimSymbol& d : exe->symbols)
      j["dynamic_dims"][d.name] = {{"min", d.min}, {"opt", d.opt}, {"max", d.max}};
    for (const auto& [kind, n] : steps) j["steps"][runtime::stepKindName(kind)] = n;
    j["arena_bytes"] = exe->arenaBytes;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "artifact:   " << path << "\n";
  std::cout << "target:     " << exe->target << " (" << exe->cpu << ")\n";
  std::cout << "inputs:\n";
  for (uint32_t id : exe->inputs) std::cout << "  " << printable(exe->buffers[id].name) << ": " << runTimeType(exe->buffers[id]) << "\n";
  std::cout << "outputs:\n";
  for (uint32_t id : exe->outputs) std::cout << "  " << printable(exe->buffers[id].name) << ": " << runTimeType(exe->buffers[id]) << "\n";
  if (!exe->symbols.empty()) std::cout << "dynamic dims:\n";
  for (const runtime::DimSymbol& d : exe->symbols)
    std::cout << "  " << printable(d.name) << ": " << ir::DimRange{d.min, d.opt, d.max}.str() << ", read from input '"
              << printable(exe->buffers[exe->inputs[d.input]].name) << "' dim " << d.axis << "\n";
  std::cout << "steps:     ";
  for (const auto& [kind, n] : steps) std::cout << " " << n << " " << runtime::stepKindName(kind);
  std::cout << "\nscratch:    " << humanBytes(int64_t(exe->arenaBytes)) << " (sized for the largest shapes)\n";
  return 0;
}

int runInspect(const ModelOptions& options, bool printIr, bool asJson, const std::string& dotPath) {
  if (options.path.ends_with(".kiln")) {
    if (printIr || !dotPath.empty())
      return reportError(Error(ErrorCode::InvalidArgument,
                               std::string(printIr ? "--ir" : "--dot") + " needs a model (.onnx, .kir), not an artifact"));
    return inspectArtifact(options.path, asJson);
  }
  auto module = loadModel(options);
  if (!module) return reportError(module.error());
  const ir::Module& m = **module;
  const ir::Graph& g = m.graph();
  if (!dotPath.empty()) {
    if (Status s = writeFile(dotPath, ir::graphToDot(g)); !s.isOk()) return reportError(s.error());
  }
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
  auto* cmd = app.add_subcommand("inspect", "Summarise a model (inputs, outputs, ops, parameters) or a .kiln artifact "
                                            "(target, inputs and outputs with their shape ranges, steps, memory)");
  auto options = std::make_shared<ModelOptions>();
  auto printIr = std::make_shared<bool>(false), asJson = std::make_shared<bool>(false);
  auto dotPath = std::make_shared<std::string>();
  addModelOptions(*cmd, *options, false);
  addShapeRangeOptions(*cmd, *options);
  cmd->add_flag("--ir", *printIr, "Also print the text IR (weights elided)");
  cmd->add_flag("--json", *asJson, "Print the summary as JSON");
  cmd->add_option("--dot", *dotPath,
                  "Also write the imported graph as Graphviz DOT to FILE (weights left out; render with `dot -Tsvg`)");
  cmd->callback([=, &exitCode] { exitCode = runInspect(*options, *printIr, *asJson, *dotPath); });
}

}  // namespace kiln::cli
