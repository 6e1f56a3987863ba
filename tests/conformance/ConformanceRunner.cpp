//===- tests/conformance/ConformanceRunner.cpp - ONNX backend node suite -===//
//
// Runs every case of the ONNX backend node test suite through kiln: import,
// verify, interpret (checking run-time shapes against static types), compare
// with the expected outputs, and round-trip the model through the text IR and
// through ONNX export (onnx::checker) and re-import. A committed list names
// each expected failure with its reason; any other failure, and any listed
// case that now passes, fails the run. Optionally writes docs/conformance.md.
// With --target cpu each case instead goes through the CPU target (the -O3
// pipeline, kernel generation, LLVM) and runs as compiled code, against its
// own expected-failure list; groups no template lowers run as host steps,
// and the summary says how many passing cases needed them. With --target
// cuda-emulated each case compiles to a CUDA artifact whose generated kernels
// run on the CPU emulation of the driver (EmulatedCudaTarget.h).
//
//===----------------------------------------------------------------------===//
#include <CLI/CLI.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/Verifier.h"
#include "kiln/runtime/Interpreter.h"
#include "EmulatedCudaTarget.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/support/File.h"
#include "kiln/support/StringPool.h"
#include "kiln/support/Strings.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

enum class Outcome { Pass, Fail, Unsupported };

struct CaseResult {
  std::string name;
  Outcome outcome = Outcome::Pass;
  std::string detail;
  std::set<std::string> ops;
  bool hostSteps = false;  ///< compiled targets: some of the case ran as host steps (reference kernels)
};

struct Tolerance {
  double rtol = 1e-3, atol = 1e-5;
};

/// Compares two tensors elementwise: floats within atol + rtol * |b| (NaN
/// matches NaN), integers and bools exactly.
std::string compareTensors(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  if (got.dtype() != want.dtype()) return std::string("dtype ") + dtypeName(got.dtype()) + " vs expected " + dtypeName(want.dtype());
  if (got.dims() != want.dims()) return "shape " + got.typeString() + " vs expected " + want.typeString();
  if (!isFloat(got.dtype())) {
    // Exact, as 64-bit integers: string tensors' ids differ in their low bits.
    std::vector<int64_t> a = got.toInt64s(), b = want.toInt64s();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      std::ostringstream os;
      os << "element " << i << ": got " << a[i] << ", expected " << b[i];
      std::optional<std::string_view> gotText = pooledString(a[i]), wantText = pooledString(b[i]);
      if (got.dtype() == DType::I64 && gotText && wantText)
        os << " (strings \"" << printable(*gotText) << "\" and \"" << printable(*wantText) << "\")";
      return os.str();
    }
    return "";
  }
  std::vector<double> a = got.toDoubles(), b = want.toDoubles();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    bool ok = std::isinf(b[i]) ? a[i] == b[i] : std::fabs(a[i] - b[i]) <= tol.atol + tol.rtol * std::fabs(b[i]);
    if (!ok) {
      std::ostringstream os;
      os << "element " << i << ": got " << a[i] << ", expected " << b[i];
      return os.str();
    }
  }
  return "";
}

std::string compareValues(const RuntimeValue& got, const RuntimeValue& want, const Tolerance& tol) {
  if (got.kind() != want.kind()) return "got " + got.describe() + ", expected " + want.describe();
  if (got.isTensor()) return compareTensors(got.tensor(), want.tensor(), tol);
  if (got.isSequence()) {
    if (got.elements().size() != want.elements().size())
      return "sequence of " + std::to_string(got.elements().size()) + ", expected " + std::to_string(want.elements().size());
    for (size_t i = 0; i < got.elements().size(); ++i) {
      std::string d = compareTensors(got.elements()[i], want.elements()[i], tol);
      if (!d.empty()) return "element " + std::to_string(i) + ": " + d;
    }
    return "";
  }
  if (got.hasValue() != want.hasValue()) return "optional presence differs";
  return got.hasValue() ? compareValues(got.value(), want.value(), tol) : "";
}

bool isUnsupportedCode(ErrorCode c) {
  return c == ErrorCode::OnnxUnsupportedOp || c == ErrorCode::UnsupportedType || c == ErrorCode::ExecUnsupported ||
         c == ErrorCode::OnnxUnsupportedOpset;
}

/// The suite stores bfloat16 data as uint16 (numpy has no bfloat16); read such
/// values back as the bf16 the model declares.
RuntimeValue bf16FromU16(const RuntimeValue& v, const ir::Type& declared) {
  if (!v.isTensor() || v.tensor().dtype() != DType::U16 || !declared.isTensor() || declared.tensor().dtype() != DType::BF16)
    return v;
  const Tensor& t = v.tensor();
  return Tensor(DType::BF16, t.dims(), t.buffer());
}

enum class Target { Interpreter, Cpu, CudaEmulated };
Target target = Target::Interpreter;
std::string emulationWorkDir;  ///< cuda-emulated: each case's kernel library is built under it

/// The inputs as tensors (the compiled targets take no sequences or maps).
std::string tensorsOf(const std::vector<RuntimeValue>& inputs, std::vector<Tensor>& tensors, bool* unsupported) {
  for (const RuntimeValue& v : inputs) {
    if (!v.isTensor()) {
      *unsupported = true;
      return "compile: non-tensor input";
    }
    tensors.push_back(v.tensor());
  }
  return "";
}

/// Runs the module's graph as CPU code (the -O3 pipeline first); "" on success.
std::string runCompiled(ir::Module& module, const std::vector<RuntimeValue>& inputs, std::vector<RuntimeValue>& outs,
                        bool* unsupported, bool* hostSteps) {
  auto pipeline = passes::optLevelPipeline(3);
  if (!pipeline) return pipeline.error().str();
  auto report = passes::runPipeline(module.graph(), *pipeline, {});
  if (!report) return "passes: " + report.error().str();
  auto model = codegen::compileForCpu(module.graph());
  if (!model) {
    *unsupported = model.error().code() == ErrorCode::CodegenUnsupported || isUnsupportedCode(model.error().code());
    return "compile: " + model.error().str();
  }
  *hostSteps = !model->lowered.stats.hostSteps.empty();
  std::vector<Tensor> tensors;
  if (std::string d = tensorsOf(inputs, tensors, unsupported); !d.empty()) return d;
  auto results = model->executor->run(tensors);
  if (!results) return results.error().str();
  for (Tensor& t : *results) outs.emplace_back(std::move(t));
  return "";
}

/// Runs the module as a CUDA artifact on the emulated driver; "" on success.
std::string runEmulatedCuda(ir::Module& module, const std::vector<RuntimeValue>& inputs, std::vector<RuntimeValue>& outs,
                            bool* unsupported, bool* hostSteps, const std::string& caseName) {
  std::vector<Tensor> tensors;
  if (std::string d = tensorsOf(inputs, tensors, unsupported); !d.empty()) return d;
  auto run = conformance::runOnEmulatedCuda(module, tensors, emulationWorkDir + "/" + caseName);
  if (!run) {
    *unsupported = run.error().code() == ErrorCode::CodegenUnsupported || isUnsupportedCode(run.error().code());
    return "cuda: " + run.error().str();
  }
  *hostSteps = run->hostSteps;
  for (Tensor& t : run->outputs) outs.emplace_back(std::move(t));
  return "";
}

/// Runs a module on one data set; returns "" on success or the failure.
std::string runDataSet(const ir::Module& module, const fs::path& dir, const Tolerance& tol, bool* unsupported,
                       bool* hostSteps) {
  const ir::Graph& g = module.graph();
  std::vector<RuntimeValue> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    auto v = kiln::onnx::readOnnxValueFile((dir / ("input_" + std::to_string(i) + ".pb")).string(), g.inputs()[i]->type());
    if (!v) return "reading input " + std::to_string(i) + ": " + v.error().str();
    inputs.push_back(bf16FromU16(*v, g.inputs()[i]->type()));
  }
  Expected<std::vector<RuntimeValue>> outs = std::vector<RuntimeValue>{};
  if (target != Target::Interpreter) {
    auto copy = ir::parseModule(ir::printModule(module), "case.kir");  // passes change the graph
    if (!copy) return copy.error().str();
    std::string d = target == Target::Cpu
                        ? runCompiled(**copy, inputs, *outs, unsupported, hostSteps)
                        : runEmulatedCuda(**copy, inputs, *outs, unsupported, hostSteps,
                                          dir.parent_path().filename().string() + "-" + dir.filename().string());
    if (!d.empty()) return d;
  } else {
    runtime::Interpreter interp(g, {.checkStaticTypes = true});
    outs = interp.run(inputs);
    if (!outs) {
      *unsupported = isUnsupportedCode(outs.error().code());
      return outs.error().str();
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    auto want = kiln::onnx::readOnnxValueFile((dir / ("output_" + std::to_string(i) + ".pb")).string(), g.outputs()[i]->type());
    if (!want) return "reading output " + std::to_string(i) + ": " + want.error().str();
    std::string d = compareValues((*outs)[i], bf16FromU16(*want, g.outputs()[i]->type()), tol);
    if (!d.empty()) return "output " + std::to_string(i) + " ('" + g.outputs()[i]->name() + "'): " + d;
  }
  return "";
}

/// Ops of the model's main graph as written in the file (for the per-op
/// report; works for models kiln does not import too).
std::set<std::string> opsOf(const fs::path& modelPath) {
  std::set<std::string> ops;
  ::onnx::ModelProto model;
  std::ifstream in(modelPath, std::ios::binary);
  if (!model.ParseFromIstream(&in)) return ops;
  for (const auto& n : model.graph().node())
    if (n.op_type() != "Constant" || model.graph().node_size() == 1)
      ops.insert(n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "::" + n.op_type());
  return ops;
}

CaseResult runCase(const fs::path& dir) {
  CaseResult r;
  r.name = dir.filename().string();
  auto fail = [&](Outcome o, std::string why) {
    r.outcome = o;
    r.detail = std::move(why);
    return r;
  };
  r.ops = opsOf(dir / "model.onnx");
  auto module = kiln::onnx::importOnnxFile((dir / "model.onnx").string());
  if (!module) return fail(isUnsupportedCode(module.error().code()) ? Outcome::Unsupported : Outcome::Fail, "import: " + module.error().str());
  if (Status s = ir::verify((*module)->graph()); !s.isOk()) return fail(Outcome::Fail, "verify: " + s.error().str());
  Tolerance tol;
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    bool unsupported = false;
    std::string d = runDataSet(**module, set, tol, &unsupported, &r.hostSteps);
    if (!d.empty()) return fail(unsupported ? Outcome::Unsupported : Outcome::Fail, set.filename().string() + ": " + d);
  }
  if (target != Target::Interpreter) return r;  // the round trips below do not depend on the target
  // Text IR round trip: print -> parse -> print is the identity.
  std::string text = ir::printModule(**module);
  auto reparsed = ir::parseModule(text, r.name + ".kir");
  if (!reparsed) return fail(Outcome::Fail, "text IR does not parse back: " + reparsed.error().str());
  if (ir::printModule(**reparsed) != text) return fail(Outcome::Fail, "text IR round trip is not the identity");
  // ONNX export round trip: checker-valid, re-imports, same results.
  auto bytes = kiln::onnx::exportOnnxBytes(**module);
  if (!bytes) return fail(Outcome::Fail, "export: " + bytes.error().str());
  auto again = kiln::onnx::importOnnxBytes(*bytes, dir.string());
  if (!again) return fail(Outcome::Fail, "re-import of the exported model: " + again.error().str());
  if (!sets.empty()) {
    bool unsupported = false;
    bool hostSteps = false;
    std::string d = runDataSet(**again, sets[0], tol, &unsupported, &hostSteps);
    if (!d.empty()) return fail(Outcome::Fail, "exported model: " + d);
  }
  return r;
}

std::map<std::string, std::string> readExpectedFailures(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    std::string reason;
    std::getline(ls, reason);
    auto hash = reason.find('#');
    reason = hash == std::string::npos ? "" : reason.substr(hash + 1);
    reason.erase(0, reason.find_first_not_of(' '));
    out[name] = reason;
  }
  return out;
}

std::string utcDate() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string machine() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// What the report says the suite is; "" describes the ONNX backend node suite.
std::string suiteDescription;

void writeReport(const std::string& path, const std::vector<CaseResult>& results,
                 const std::map<std::string, std::string>& expected, const std::string& command) {
  size_t pass = 0, fail = 0, unsup = 0;
  std::map<std::string, std::array<int, 3>> perOp;
  for (const auto& r : results) {
    int k = r.outcome == Outcome::Pass ? 0 : r.outcome == Outcome::Fail ? 1 : 2;
    (k == 0 ? pass : k == 1 ? fail : unsup)++;
    for (const auto& op : r.ops) perOp[op][size_t(k)]++;
  }
  std::ofstream out(path);
  std::string what = suiteDescription.empty()
                         ? "The ONNX backend node test suite (" + std::to_string(results.size()) +
                               " cases, generated from Debian's python3-onnx 1.12)"
                         : suiteDescription + " (" + std::to_string(results.size()) + " cases)";
  const char* title = target == Target::Cpu            ? " on the CPU target"
                      : target == Target::CudaEmulated ? " on the CUDA target (emulated)"
                                                       : "";
  const char* how = target == Target::Cpu ? "the CPU target (the -O3 pipeline, generated kernels, LLVM)"
                    : target == Target::CudaEmulated
                        ? "the CUDA target (the -O3 pipeline, a CUDA artifact of generated kernels for sm_90, "
                          "run on the CPU emulation of the driver with each kernel's exact CUDA C)"
                        : "reference interpreter";
  out << "# ONNX conformance" << title << "\n\n"
      << what << " run through kiln's importer and " << how
      << ", compared with the expected outputs (rtol 1e-3, atol 1e-5; integers exactly)."
      << (target != Target::Interpreter ? ""
                    : " Each case is also printed as text IR and parsed back (must be identical) and exported to "
                      "ONNX (must pass onnx::checker), re-imported and run again.")
      << "\n\nGenerated " << utcDate() << " on " << machine() << ". Regenerate with `" << command << "`.\n\n"
      << "| | cases | share |\n|---|---|---|\n";
  auto pct = [&](size_t n) {
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << 100.0 * double(n) / double(std::max<size_t>(1, results.size())) << "%";
    return s.str();
  };
  out << "| passed | " << pass << " | " << pct(pass) << " |\n| failed | " << fail << " | " << pct(fail)
      << " |\n| unsupported | " << unsup << " | " << pct(unsup) << " |\n\n";
  out << "## Per op\n\nA case counts for every op in its model (expanded function tests use several).\n\n"
      << "| op | passed | failed | unsupported |\n|---|---|---|---|\n";
  for (const auto& [op, c] : perOp) out << "| " << op << " | " << c[0] << " | " << c[1] << " | " << c[2] << " |\n";
  out << "\n## Expected failures\n\n| case | reason |\n|---|---|\n";
  for (const auto& [name, reason] : expected) out << "| " << name << " | " << reason << " |\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs the ONNX backend node test suite through kiln."};
  std::string suite, expectedPath, report, filter;
  bool verbose = false;
  app.add_option("--suite", suite, "Directory holding the test_* case directories")->required()->check(CLI::ExistingDirectory);
  app.add_option("--expected-failures", expectedPath, "File listing expected failures (name  # reason)");
  app.add_option("--report", report, "Write a markdown report to this file");
  app.add_option("--filter", filter, "Only run cases whose name matches this regex");
  app.add_flag("-v,--verbose", verbose, "Print every case");
  app.add_option("--description", suiteDescription, "What the report calls the suite (default: the ONNX backend node suite)");
  std::string targetName = "interpreter", driver;
  app.add_option("--target", targetName,
                 "Run cases on: interpreter, cpu (compiled code) or cuda-emulated (a CUDA artifact on the emulated driver)")
      ->default_val("interpreter")
      ->check(CLI::IsMember({"interpreter", "cpu", "cuda-emulated"}));
  app.add_option("--emulated-driver", driver, "cuda-emulated: the emulated driver library (libkiln_emulated_cuda.so)")
      ->check(CLI::ExistingFile);
  app.add_option("--work", emulationWorkDir, "cuda-emulated: directory for each case's kernel library")
      ->default_val("conformance-cuda-work");
  CLI11_PARSE(app, argc, argv);

  target = targetName == "cpu" ? Target::Cpu : targetName == "cuda-emulated" ? Target::CudaEmulated : Target::Interpreter;
  if (target == Target::CudaEmulated) {
    if (driver.empty()) {
      std::cerr << "kiln-conformance: --target cuda-emulated needs --emulated-driver\n";
      return 2;
    }
    conformance::useEmulatedDriver(driver);
  }
  auto expected = expectedPath.empty() ? std::map<std::string, std::string>{} : readExpectedFailures(expectedPath);
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(suite))
    if (e.is_directory() && (filter.empty() || std::regex_search(e.path().filename().string(), std::regex(filter))))
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results;
  int unexpected = 0;
  for (const auto& c : cases) {
    CaseResult r = runCase(c);
    bool listed = expected.count(r.name) != 0;
    bool failed = r.outcome != Outcome::Pass;
    if (failed && !listed) {
      ++unexpected;
      std::cout << "UNEXPECTED FAILURE " << r.name << ": " << r.detail << "\n";
    } else if (!failed && listed) {
      ++unexpected;
      std::cout << "UNEXPECTED PASS " << r.name << " (remove it from the expected-failure list)\n";
    } else if (verbose) {
      std::cout << (failed ? "expected failure " : "pass ") << r.name << (failed ? ": " + r.detail : "")
                << (!failed && r.hostSteps ? " (host steps)" : "") << "\n";
    }
    results.push_back(std::move(r));
  }
  size_t pass = std::count_if(results.begin(), results.end(), [](const CaseResult& r) { return r.outcome == Outcome::Pass; });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "conformance: " << pass << " / " << results.size() << " cases pass ("
            << (results.empty() ? 0.0 : 100.0 * double(pass) / double(results.size())) << "%), " << unexpected
            << " unexpected result(s), " << secs << " s\n";
  if (target != Target::Interpreter) {
    size_t host = std::count_if(results.begin(), results.end(),
                                [](const CaseResult& r) { return r.outcome == Outcome::Pass && r.hostSteps; });
    std::cout << targetName << " target: " << pass - host << " passing cases ran entirely as generated kernels, " << host
              << " with host steps (reference kernels for extern ops or data-dependent shapes)\n";
  }
  if (!report.empty()) {
    std::string command = "build/tests/conformance/kiln-conformance";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + (std::string(argv[i]).find(' ') != std::string::npos ? "'" + std::string(argv[i]) + "'" : argv[i]);
    writeReport(report, results, expected, command);
  }
  return unexpected == 0 ? 0 : 1;
}
