//===- tests/conformance/EmulatedCudaTarget.cpp - Cases on the CUDA target -===//
//
// See EmulatedCudaTarget.h. The emulated driver looks each kernel up by name
// in the library KILN_EMULATED_KERNELS names when a module loads, so the
// variable is set to the case's library before its executor is created.
//
//===----------------------------------------------------------------------===//
#include "EmulatedCudaTarget.h"

#include <cstdlib>

#include "CudaEmulator.h"
#include "kiln/codegen/LibraryTactics.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassManager.h"
#include "kiln/runtime/CudaExecutor.h"

namespace kiln::conformance {

void useEmulatedDriver(const std::string& driver) { setenv("KILN_CUDA_DRIVER", driver.c_str(), 1); }

Expected<EmulatedRun> runOnEmulatedCuda(ir::Module& module, const std::vector<Tensor>& inputs,
                                        const std::string& workDir) {
  KILN_ASSIGN(auto pipeline, passes::optLevelPipeline(passes::kDefaultOptLevel));
  KILN_TRY(passes::runPipeline(module.graph(), pipeline, {}));
  codegen::CompileOptions options;
  KILN_ASSIGN(options.libraryTactics, codegen::parseLibraryTactics("off"));
  codegen::CudaCompileOptions cuda;
  cuda.archs = {90};
  KILN_ASSIGN(codegen::LoweredModel lowered, codegen::compileCudaArtifact(module.graph(), options, cuda));
  KILN_ASSIGN(std::vector<codegen::CudaKernel> sources, emulation::cudaSourcesOf(lowered));
  std::unique_ptr<emulation::EmulatedKernels> library;
  if (!sources.empty()) {  // a case of host steps only loads no module
    KILN_ASSIGN(library, emulation::EmulatedKernels::build(sources, workDir));
    setenv("KILN_EMULATED_KERNELS", library->libraryPath().c_str(), 1);
  }
  KILN_ASSIGN(auto executor, runtime::CudaExecutor::create(lowered.executable));
  EmulatedRun run;
  run.hostSteps = !lowered.stats.hostSteps.empty();
  KILN_ASSIGN(run.outputs, executor->run(inputs));
  return run;
}

}  // namespace kiln::conformance
