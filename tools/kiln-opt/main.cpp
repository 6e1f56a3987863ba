//===- tools/kiln-opt/main.cpp - Text IR in, text IR out -------------------===//
//
// The test driver for IR-level tests (FileCheck): reads text IR (.kir) or ONNX,
// verifies it, runs a pass pipeline (--pipeline, with the per-pass report on
// stderr), and prints the result as text IR (or writes ONNX).
//
//===----------------------------------------------------------------------===//
#include <CLI/CLI.hpp>

#include <iostream>
#include <iterator>

#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/support/File.h"

using namespace kiln;

int main(int argc, char** argv) {
  CLI::App app{"kiln-opt: reads text IR or ONNX, verifies it, runs a pass pipeline and prints text IR.\n"
               "Reads stdin when the input is '-'."};
  std::string input = "-", output = "-";
  bool elide = false, printHash = false, noVerifyTypes = false;
  int64_t inlineLimit = 16;
  app.add_option("input", input, "Input .kir or .onnx file ('-' for text IR on stdin)");
  app.add_option("-o,--output", output, "Output file: .kir, .onnx, or '-' for stdout");
  app.add_flag("--elide-weights", elide, "Print large tensors by reference only (not parseable)");
  app.add_option("--inline-limit", inlineLimit, "Largest tensor printed inline (elements)")->default_val(16);
  app.add_flag("--print-hash", printHash, "Print the structural hash instead of the IR");
  app.add_flag("--no-verify-types", noVerifyTypes, "Verify structure only, not types against inference");
  std::string pipelineText, report = "none";
  bool verifyEach = false, printAfterChange = false;
  int optLevel = -1;
  app.add_option("-O", optLevel, "Run the pipeline of this opt level (0-3) instead of -p")
      ->check(CLI::Range(0, passes::kMaxOptLevel));
  app.add_option("-p,--pipeline", pipelineText, "Passes to run, e.g. 'dead-code-elimination' (see `kiln passes list`)");
  app.add_flag("--verify-each", verifyEach, "Verify the IR and its types after every pass");
  app.add_flag("--print-after-change", printAfterChange, "Print the IR to stderr after each pass that changed it");
  app.add_option("--report", report, "Per-pass report on stderr: none, table or json")
      ->default_val("none")
      ->check(CLI::IsMember({"none", "table", "json"}));
  CLI11_PARSE(app, argc, argv);

  auto fail = [](const Error& e) {
    std::cerr << "kiln-opt: " << e.str() << "\n";
    return 1;
  };
  Expected<std::unique_ptr<ir::Module>> module = Error(ErrorCode::Internal, "no input");
  if (input.size() > 5 && input.substr(input.size() - 5) == ".onnx") {
    module = onnx::importOnnxFile(input);
  } else {
    std::string text;
    if (input == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      auto t = readFile(input);
      if (!t) return fail(t.error());
      text = *t;
    }
    module = ir::parseModule(text, input == "-" ? "<stdin>" : input);
  }
  if (!module) return fail(module.error());
  if (Status s = ir::verify((*module)->graph(), {.checkTypes = !noVerifyTypes}); !s.isOk()) return fail(s.error());
  if (optLevel >= 0 && !pipelineText.empty()) return fail(Error(ErrorCode::InvalidArgument, "give -O or -p, not both"));
  if (!pipelineText.empty() || optLevel >= 0) {
    auto pipeline = optLevel >= 0 ? passes::optLevelPipeline(optLevel) : passes::parsePipeline(pipelineText);
    if (!pipeline) return fail(pipeline.error());
    passes::RunOptions run{.context = {.verifyEach = verifyEach}};
    if (printAfterChange) run.afterChange = passes::printIrAfterChange(std::cerr, false);
    auto result = passes::runPipeline((*module)->graph(), *pipeline, run);
    if (!result) return fail(result.error());
    if (report == "table") passes::printReportTable(std::cerr, *result);
    if (report == "json") std::cerr << passes::reportToJson(*result) << "\n";
  }
  if (printHash) {
    std::cout << ir::structuralHashHex((*module)->graph()) << "\n";
    return 0;
  }
  if (output.size() > 5 && output.substr(output.size() - 5) == ".onnx") {
    if (Status s = onnx::exportOnnxFile(**module, output); !s.isOk()) return fail(s.error());
    return 0;
  }
  std::string text = ir::printModule(**module, {.inlineTensorLimit = inlineLimit, .elideResources = elide});
  if (output == "-") {
    std::cout << text;
    return 0;
  }
  if (Status s = writeFile(output, text); !s.isOk()) return fail(s.error());
  return 0;
}
