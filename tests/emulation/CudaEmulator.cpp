//===- tests/emulation/CudaEmulator.cpp - Run generated CUDA C on the CPU -===//
//
// See CudaEmulator.h. The library's translation unit #includes every
// kernel's .cu file as written and adds one C launcher per kernel, which
// casts the argument pointers to the parameter types and runs the kernel
// over the grid it is given under cuda_emulation.h (the emulated driver calls
// the same launchers). Compiler diagnostics come back in the error with the
// path of the source that failed.
//
//===----------------------------------------------------------------------===//
#include "CudaEmulator.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/support/File.h"

namespace kiln::emulation {

Expected<std::vector<codegen::CudaKernel>> cudaSourcesOf(const codegen::LoweredModel& model) {
  std::vector<codegen::CudaKernel> sources;
  for (const codegen::LoweredKernel& k : model.kernels) {
    KILN_ASSIGN(codegen::CudaKernel source, codegen::emitCuda(k.kernel, codegen::fusedOpsOf(*k.group)));
    sources.push_back(std::move(source));
  }
  return sources;
}
namespace {

/// The compiler's diagnostics (empty when the log cannot be read).
std::string compileLog(const std::string& path) {
  Expected<std::string> log = readFile(path);
  return log ? *log : std::string();
}

}  // namespace

Expected<std::unique_ptr<EmulatedKernels>> EmulatedKernels::build(const std::vector<codegen::CudaKernel>& kernels,
                                                                  const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeError(ErrorCode::IoError, "cannot create ", dir, ": ", ec.message());
  const std::string workDir = fs::absolute(dir).string();  // the unit #includes the sources by path
  std::ostringstream unit;
  for (const codegen::CudaKernel& k : kernels) {
    std::string path = workDir + "/" + k.name + ".cu";
    KILN_TRY(writeFile(path, k.source));
    unit << "#include \"" << path << "\"\n";
  }
  for (const codegen::CudaKernel& k : kernels) {
    unit << "extern \"C\" const int kiln_emulate_params_" << k.name << " = " << k.paramTypes.size() << ";\n";
    unit << "extern \"C\" int kiln_emulate_" << k.name
         << "(const unsigned* g, const unsigned* b, void* const* args, char* error, unsigned long size) {\n"
         << "  std::string e = kiln_emulation::launch(dim3{g[0], g[1], g[2]}, dim3{b[0], b[1], b[2]}, [&] { " << k.name << "(";
    for (size_t p = 0; p < k.paramTypes.size(); ++p) unit << (p ? ", " : "") << "(" << k.paramTypes[p] << ")args[" << p << "]";
    unit << "); });\n  if (e.empty()) return 0;\n  std::snprintf(error, size, \"%s\", e.c_str());\n  return 1;\n}\n";
  }
  const std::string unitPath = workDir + "/kernels.cpp", library = workDir + "/kernels.so", log = workDir + "/compile.log";
  KILN_TRY(writeFile(unitPath, unit.str()));
  std::string command = std::string(KILN_HOST_CXX) + " -std=c++17 -O1 -fPIC -shared -w -include " +
                        KILN_EMULATION_HEADER + " " + unitPath + " -o " + library + " > " + log + " 2>&1";
  if (std::system(command.c_str()) != 0)
    return makeError(ErrorCode::Internal, "the CUDA emulation build of ", unitPath, " failed:\n", compileLog(log));
  std::unique_ptr<EmulatedKernels> out(new EmulatedKernels);
  out->library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out->library_) return makeError(ErrorCode::Internal, "cannot load ", library, ": ", dlerror());
  for (const codegen::CudaKernel& k : kernels) {
    auto fn = reinterpret_cast<LaunchFn>(dlsym(out->library_, ("kiln_emulate_" + k.name).c_str()));
    if (!fn) return makeError(ErrorCode::Internal, "no launcher for ", k.name, " in ", library);
    out->entries_.push_back(fn);
  }
  out->kernels_ = kernels;
  out->libraryPath_ = library;
  return out;
}

EmulatedKernels::~EmulatedKernels() {
  if (library_) dlclose(library_);
}

Status EmulatedKernels::launch(size_t index, void* const* args) const {
  if (index >= entries_.size()) return makeError(ErrorCode::Internal, "no emulated kernel ", index);
  char error[512] = {0};
  const codegen::CudaKernel& k = kernels_[index];
  const unsigned grid[3] = {unsigned(k.grid[0]), unsigned(k.grid[1]), unsigned(k.grid[2])};
  const unsigned block[3] = {unsigned(k.block[0]), unsigned(k.block[1]), unsigned(k.block[2])};
  if (entries_[index](grid, block, args, error, sizeof error) != 0)
    return makeError(ErrorCode::Internal, "CUDA kernel ", kernels_[index].name, " under emulation: ", error);
  return Status::ok();
}

}  // namespace kiln::emulation
