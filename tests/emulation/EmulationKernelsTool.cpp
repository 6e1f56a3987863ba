//===- tests/emulation/EmulationKernelsTool.cpp - kiln-emulation-kernels ---===//
//
//   kiln-emulation-kernels MODEL.onnx WORK_DIR [f32|tf32|f16|bf16 [off|auto|all]]
//
// Builds the CPU emulation library of every CUDA kernel kiln generates for a
// model at the default optimization level (the kernels `kiln compile
// --target cuda` and `kiln bench --backend cuda` produce; with tf32, f16 or
// bf16, those of `--precision tf32` / `f16` / `bf16`; then with auto or all,
// those left beside `--library-tactics` library steps), and prints its path. With KILN_CUDA_DRIVER naming the emulated driver and
// KILN_EMULATED_KERNELS this library, the kiln CLI runs the model's CUDA
// code on a machine without a GPU: how the CLI tests and bench/gpu-run's
// self-test drive the CUDA backend.
//
//===----------------------------------------------------------------------===//
#include <iostream>

#include "CudaEmulator.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/CudaCompiler.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/passes/Pipeline.h"

using namespace kiln;

namespace {

Expected<std::string> build(const std::string& modelPath, const std::string& workDir, const std::string& precision,
                            const std::string& tactics) {
  passes::registerAllPasses();
  KILN_ASSIGN(auto module, onnx::importOnnxFile(modelPath));
  KILN_ASSIGN(auto pipeline, passes::optLevelPipeline(passes::kDefaultOptLevel));
  KILN_ASSIGN(auto mixed, passes::precisionPasses(precision));  // as the CLI's --precision does
  pipeline.insert(pipeline.end(), mixed.begin(), mixed.end());
  KILN_TRY(passes::runPipeline(module->graph(), pipeline, {}));
  codegen::CompileOptions options;
  options.allowTf32 = precision == "tf32";
  KILN_ASSIGN(options.libraryTactics, codegen::parseLibraryTactics(tactics));
  KILN_ASSIGN(codegen::LoweredModel lowered, codegen::lowerModel(module->graph(), codegen::KernelTarget::Gpu, options));
  std::vector<codegen::CudaKernel> sources;
  for (const codegen::LoweredKernel& k : lowered.kernels) {
    KILN_ASSIGN(codegen::CudaKernel source, codegen::emitCuda(k.kernel, codegen::fusedOpsOf(*k.group)));
    sources.push_back(std::move(source));
  }
  KILN_ASSIGN(auto library, emulation::EmulatedKernels::build(sources, workDir));
  return library->libraryPath();
}

}  // namespace

int main(int argc, char** argv) {
  const bool help = argc == 2 && std::string(argv[1]) == "--help";
  if (argc < 3 || argc > 5) {
    (help ? std::cout : std::cerr) << "usage: kiln-emulation-kernels MODEL.onnx WORK_DIR [f32|tf32|f16|bf16 [off|auto|all]]\n"
                                      "Builds the CPU emulation library of the model's CUDA kernels and prints its path.\n";
    return help ? 0 : 2;
  }
  auto library = build(argv[1], argv[2], argc >= 4 ? argv[3] : "f32", argc == 5 ? argv[4] : "off");
  if (!library) {
    std::cerr << "kiln-emulation-kernels: " << library.error().str() << "\n";
    return 1;
  }
  std::cout << *library << "\n";
  return 0;
}
