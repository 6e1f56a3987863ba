//===- tools/kiln/ConvertCommand.cpp - `kiln convert` ----------------------===//
//
// Converts between ONNX and kiln's text IR by output extension: .kir writes
// text IR (weights included), .onnx exports opset-17 ONNX (checked with
// onnx::checker).
//
//===----------------------------------------------------------------------===//
#include <iostream>

#include "Commands.h"
#include "ModelLoader.h"
#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/ir/Printer.h"
#include "kiln/support/File.h"

namespace kiln::cli {
namespace {

int runConvert(const ModelOptions& options, const std::string& out) {
  auto module = loadModel(options);
  if (!module) return reportError(module.error());
  Status s;
  if (out.size() > 4 && out.substr(out.size() - 4) == ".kir") {
    s = writeFile(out, ir::printModule(**module));
  } else if (out.size() > 5 && out.substr(out.size() - 5) == ".onnx") {
    s = onnx::exportOnnxFile(**module, out);
  } else {
    s = Error(ErrorCode::InvalidArgument, "output '" + out + "' must end in .kir (text IR) or .onnx");
  }
  if (!s.isOk()) return reportError(s.error());
  std::cout << "wrote " << out << "\n";
  return 0;
}

}  // namespace

void addConvertCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("convert", "Convert between ONNX (.onnx) and kiln text IR (.kir)");
  auto options = std::make_shared<ModelOptions>();
  auto out = std::make_shared<std::string>();
  addModelOptions(*cmd, *options, false);
  cmd->add_option("-o,--output", *out, "Output file: .kir or .onnx")->required();
  cmd->callback([=, &exitCode] { exitCode = runConvert(*options, *out); });
}

}  // namespace kiln::cli
