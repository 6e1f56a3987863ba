//===- tests/emulation/EmulationKernelsTool.cpp - kiln-emulation-kernels ---===//
//
//   kiln-emulation-kernels MODEL.onnx WORK_DIR [f32|tf32|f16|bf16 [off|auto|all [TUNING_DB]]] [--shape name:dims ...]
//                          [--min-shapes S --opt-shapes S --max-shapes S]
//   kiln-emulation-kernels CANDIDATE_DIR WORK_DIR
//
// Builds the CPU emulation library of every CUDA kernel kiln generates for a
// model at the default optimization level (the kernels `kiln compile
// --target cuda` and `kiln bench --backend cuda` produce; with tf32, f16 or
// bf16, those of `--precision tf32` / `f16` / `bf16`; then with auto or all,
// those left beside `--library-tactics` library steps; with a tuning
// database, the schedules `kiln compile --target cuda --tuning-db` takes
// from the records of the database's only GPU; --shape binds dynamic input
// dims and the range options keep them dynamic, as with `kiln compile`), and prints its path. With KILN_CUDA_DRIVER naming the emulated driver and
// KILN_EMULATED_KERNELS this library, the kiln CLI runs the model's CUDA
// code on a machine without a GPU: how the CLI tests and bench/gpu-run's
// self-test drive the CUDA backend. Given a directory of CUDA candidates
// (`kiln tune --target cuda:sm_NN --export-candidates`), it builds their
// CUDA C instead, so kiln-measure can measure them on the emulated driver.
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "CudaEmulator.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/passes/Pipeline.h"
#include "kiln/support/File.h"
#include "kiln/tune/TuningDatabase.h"

using namespace kiln;

namespace {

Expected<std::string> build(const std::string& modelPath, const std::string& workDir, const std::string& precision,
                            const std::string& tactics, const std::string& tuningDb, const onnx::ImportOptions& shapes) {
  passes::registerAllPasses();
  KILN_ASSIGN(auto module, onnx::importOnnxFile(modelPath, shapes));
  KILN_ASSIGN(auto pipeline, passes::optLevelPipeline(passes::kDefaultOptLevel));
  KILN_ASSIGN(auto mixed, passes::precisionPasses(precision));  // as the CLI's --precision does
  pipeline.insert(pipeline.end(), mixed.begin(), mixed.end());
  KILN_TRY(passes::runPipeline(module->graph(), pipeline, {}));
  codegen::CompileOptions options;
  options.allowTf32 = precision == "tf32";
  KILN_ASSIGN(options.libraryTactics, codegen::parseLibraryTactics(tactics));
  if (!tuningDb.empty()) {
    KILN_ASSIGN(tune::TuningDatabase db, tune::TuningDatabase::open(tuningDb, true));
    std::string gpu;
    for (const tune::TuningRecord& r : db.records())
      if (r.target == "cuda") gpu = r.device;
    KILN_ASSIGN(tune::TaskSet tasks, tune::extractTasks(module->graph(), codegen::KernelTarget::Gpu));
    tune::applyTuningDatabase(tasks, db, "cuda", gpu, tune::cudaToolkitName()).applyTo(options);
  }
  options.dimRanges = module->dimRanges;
  KILN_ASSIGN(codegen::LoweredModel lowered, codegen::lowerModel(module->graph(), codegen::KernelTarget::Gpu, options));
  KILN_ASSIGN(std::vector<codegen::CudaKernel> sources, emulation::cudaSourcesOf(lowered));
  KILN_ASSIGN(auto library, emulation::EmulatedKernels::build(sources, workDir));
  return library->libraryPath();
}

/// The emulation library of the generated candidates in `dir` (its manifest names each one's CUDA C file).
Expected<std::string> buildCandidates(const std::string& dir, const std::string& workDir) {
  KILN_ASSIGN(std::string text, readFile(dir + "/manifest.json"));
  nlohmann::json manifest = nlohmann::json::parse(text, nullptr, false);
  if (manifest.is_discarded() || manifest.value("target", "") != "cuda")
    return makeError(ErrorCode::FileFormat, dir, "/manifest.json is not a manifest of CUDA candidates");
  std::vector<codegen::CudaKernel> sources;
  for (const auto& entry : manifest.at("candidates")) {
    // A library call: the emulated cuBLASLt or cuDNN runs it, and the kernel of its tail, if any, is ours.
    if (entry.contains("library") && !entry.contains("tail")) continue;
    const auto& c = entry.contains("library") ? entry.at("tail") : entry;
    codegen::CudaKernel k;
    k.name = c.at("id").get<std::string>();
    KILN_ASSIGN(k.source, readFile(dir + "/" + c.at("source").get<std::string>()));
    k.paramTypes = c.at("param_types").get<std::vector<std::string>>();
    for (size_t d = 0; d < 3; ++d) {
      k.grid[d] = c.at("grid").at(d).get<int64_t>();
      k.block[d] = c.at("block").at(d).get<int64_t>();
    }
    sources.push_back(std::move(k));
  }
  KILN_ASSIGN(auto library, emulation::EmulatedKernels::build(sources, workDir));
  return library->libraryPath();
}

}  // namespace

int main(int rawArgc, char** rawArgv) {
  std::vector<char*> args;
  onnx::ImportOptions shapes;
  const std::map<std::string, std::map<std::string, Dims>*> ranges{
      {"--min-shapes", &shapes.minShapes}, {"--opt-shapes", &shapes.optShapes}, {"--max-shapes", &shapes.maxShapes}};
  for (int i = 0; i < rawArgc; ++i) {
    const std::string flag = rawArgv[i];
    if ((flag != "--shape" && !ranges.count(flag)) || i + 1 == rawArgc) {
      args.push_back(rawArgv[i]);
      continue;
    }
    std::stringstream list(rawArgv[++i]);
    Status parsed = Status::ok();
    for (std::string item; parsed.isOk() && std::getline(list, item, ',');)
      parsed = flag == "--shape" ? onnx::parseShapeBinding(item, shapes) : onnx::parseShapeRange(flag, item, *ranges.at(flag));
    if (!parsed.isOk()) {
      std::cerr << "kiln-emulation-kernels: " << parsed.error().str() << "\n";
      return 2;
    }
  }
  int argc = int(args.size());
  char** argv = args.data();
  const bool help = argc == 2 && std::string(argv[1]) == "--help";
  if (argc < 3 || argc > 6) {
    (help ? std::cout : std::cerr) << "usage: kiln-emulation-kernels MODEL.onnx WORK_DIR [f32|tf32|f16|bf16 [off|auto|all [TUNING_DB]]] [--shape name:dims ...]\n"
                                      "       kiln-emulation-kernels CANDIDATE_DIR WORK_DIR\n"
                                      "Builds the CPU emulation library of the model's CUDA kernels (or of exported CUDA\n"
                                      "tuning candidates) and prints its path.\n";
    return help ? 0 : 2;
  }
  auto library = std::filesystem::is_directory(argv[1])
                     ? buildCandidates(argv[1], argv[2])
                     : build(argv[1], argv[2], argc >= 4 ? argv[3] : "f32", argc >= 5 ? argv[4] : "off",
                             argc == 6 ? argv[5] : "", shapes);
  if (!library) {
    std::cerr << "kiln-emulation-kernels: " << library.error().str() << "\n";
    return 1;
  }
  std::cout << *library << "\n";
  return 0;
}
