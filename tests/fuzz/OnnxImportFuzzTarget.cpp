//===- tests/fuzz/OnnxImportFuzzTarget.cpp - Fuzz target of the ONNX importer -===//
//
// libFuzzer entry point: imports arbitrary bytes as an ONNX model. Any crash,
// sanitizer report or failed internal check is a finding. When the import
// succeeds, the result must also verify (types included), survive a text-IR
// round trip exactly, export without crashing, and equal the import of the
// same bytes by protobuf alone (an empty second graph field, which protobuf
// merges into the first, stops the importer's initializer split).
//
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"

namespace {
[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kiln fuzz finding: %s: %s\n", what, detail.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  // External data resolves in a directory that holds no files.
  auto module = kiln::onnx::importOnnxBytes(bytes, "/nonexistent-kiln-fuzz-dir");
  if (!module) return 0;  // a clean error is the expected outcome for most inputs
  const kiln::ir::Graph& g = (*module)->graph();
  if (kiln::Status s = kiln::ir::verify(g); !s.isOk()) finding("imported IR does not verify", s.error().str());
  std::string text = kiln::ir::printModule(**module);
  auto reparsed = kiln::ir::parseModule(text, "fuzz.kir");
  if (!reparsed) finding("printed IR does not parse", reparsed.error().str());
  if (kiln::ir::printModule(**reparsed) != text) finding("text IR round trip differs", "");
  (void)kiln::onnx::exportOnnxBytes(**module);
  auto plain = kiln::onnx::importOnnxBytes(bytes + std::string("\x3a\x00", 2), "/nonexistent-kiln-fuzz-dir");
  if (!plain) finding("the import without the initializer split fails", plain.error().str());
  if (kiln::ir::structuralHash((*plain)->graph()) != kiln::ir::structuralHash(g))
    finding("the import without the initializer split differs", "");
  return 0;
}
