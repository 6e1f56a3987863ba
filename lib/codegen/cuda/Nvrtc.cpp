//===- lib/codegen/cuda/Nvrtc.cpp - CUDA C to cubin and PTX with NVRTC ----===//
//
// One NVRTC program per compile: `-arch=sm_XX` yields SASS (the cubin the
// driver loads as is), `-arch=compute_XX` PTX for GPUs newer than any cubin.
// Programs are independent, so callers may compile in parallel. A failure is
// a kiln bug (generated code must compile): the error carries NVRTC's log and
// the name of the kernel's source file.
//
//===----------------------------------------------------------------------===//
#include <nvrtc.h>

#include <memory>
#include <vector>

#include "kiln/codegen/cuda/Nvrtc.h"

namespace kiln::codegen {
namespace {

struct Program {
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

std::string programLog(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(size - 1);
  return log;
}

/// Compiles with `-arch=<arch>`; returns the program (for its outputs) and the log.
Expected<std::pair<std::unique_ptr<Program>, std::string>> compile(const std::string& source, const std::string& sourceName,
                                                                   const std::string& arch) {
  auto p = std::make_unique<Program>();
  nvrtcResult r = nvrtcCreateProgram(&p->prog, source.c_str(), sourceName.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    return makeError(ErrorCode::Internal, "NVRTC could not create a program for ", sourceName, ": ", nvrtcGetErrorString(r));
  std::string archFlag = "-arch=" + arch;
  std::vector<const char*> options = {archFlag.c_str()};
  for (const std::string& o : nvrtcOptions()) options.push_back(o.c_str());
  r = nvrtcCompileProgram(p->prog, int(options.size()), options.data());
  std::string log = programLog(p->prog);
  if (r != NVRTC_SUCCESS)
    return makeError(ErrorCode::Internal, "NVRTC failed to compile generated kernel source ", sourceName, " for ", arch,
                     " (a kiln bug; please report it with the source): ", nvrtcGetErrorString(r), "\n", log);
  return std::make_pair(std::move(p), std::move(log));
}

}  // namespace

const std::vector<std::string>& nvrtcOptions() {
  static const std::vector<std::string> options = {"-std=c++17", "-default-device", "-lineinfo"};
  return options;
}

Expected<CudaBinary> compileCubin(const std::string& source, const std::string& sourceName, int sm) {
  KILN_ASSIGN(auto compiled, compile(source, sourceName, "sm_" + std::to_string(sm)));
  CudaBinary out;
  out.sm = sm;
  out.log = std::move(compiled.second);
  size_t size = 0;
  if (nvrtcGetCUBINSize(compiled.first->prog, &size) != NVRTC_SUCCESS || size == 0)
    return makeError(ErrorCode::Internal, "NVRTC produced no cubin for ", sourceName, " (sm_", sm, ")");
  out.cubin.resize(size);
  nvrtcGetCUBIN(compiled.first->prog, reinterpret_cast<char*>(out.cubin.data()));
  return out;
}

Expected<std::string> compilePtx(const std::string& source, const std::string& sourceName, int sm) {
  KILN_ASSIGN(auto compiled, compile(source, sourceName, "compute_" + std::to_string(sm)));
  size_t size = 0;
  if (nvrtcGetPTXSize(compiled.first->prog, &size) != NVRTC_SUCCESS || size == 0)
    return makeError(ErrorCode::Internal, "NVRTC produced no PTX for ", sourceName, " (compute_", sm, ")");
  std::string ptx(size, '\0');
  nvrtcGetPTX(compiled.first->prog, ptx.data());
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kiln::codegen
