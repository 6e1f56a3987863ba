//===- lib/codegen/cuda/CudaCompiler.cpp - Graph to a CUDA executable -----===//
//
// See CudaCompiler.h. NVRTC programs are independent, so every (kernel,
// architecture) pair and each kernel's PTX is one job on the thread pool;
// identical kernels were already merged by lowerModel. The first failure
// (a kiln bug: generated code must compile) is reported with NVRTC's log.
// Each job first looks in the NVRTC cache, and stores what it compiled.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/cuda/CudaCompiler.h"

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "kiln/codegen/cuda/NvrtcCache.h"
#include "kiln/support/File.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/ThreadPool.h"

namespace kiln::codegen {

std::string fusedOpsOf(const KernelGroup& group) {
  std::string ops;
  for (const ir::Node* n : group.nodes) ops += (ops.empty() ? "" : " + ") + n->qualifiedOpType();
  return ops;
}

Expected<LoweredModel> compileCudaArtifact(ir::Graph& graph, const CompileOptions& options,
                                           const CudaCompileOptions& cuda) {
  if (cuda.archs.empty()) return makeError(ErrorCode::InvalidArgument, "no CUDA architectures to compile for");
  for (int sm : cuda.archs)
    if (sm < 50 || sm > 200) return makeError(ErrorCode::InvalidArgument, "sm_", sm, " is not a CUDA architecture kiln targets");
  KILN_ASSIGN(LoweredModel model, lowerModel(graph, KernelTarget::Gpu, options));
  Stopwatch timer;
  if (!cuda.emitDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cuda.emitDir, ec);
    if (ec) return makeError(ErrorCode::IoError, "cannot create directory ", cuda.emitDir, ": ", ec.message());
  }
  std::vector<CudaKernel> sources;
  for (const LoweredKernel& k : model.kernels) {
    KILN_ASSIGN(CudaKernel source, emitCuda(k.kernel, fusedOpsOf(*k.group)));
    if (!cuda.emitDir.empty()) KILN_TRY(writeFile(cuda.emitDir + "/" + source.name + ".cu", source.source));
    sources.push_back(std::move(source));
  }
  model.stats.emitMs = timer.elapsedMs();
  timer.restart();

  runtime::Executable& exe = *model.executable;
  exe.target = "cuda";
  exe.cpu.clear();
  for (int sm : cuda.archs) exe.cpu += (exe.cpu.empty() ? "sm_" : ",sm_") + std::to_string(sm);
  const int ptxArch = *std::min_element(cuda.archs.begin(), cuda.archs.end());
  exe.cudaKernels.assign(sources.size(), {});
  for (size_t k = 0; k < sources.size(); ++k) {
    runtime::CudaKernelCode& c = exe.cudaKernels[k];
    for (size_t d = 0; d < 3; ++d) {
      c.grid[d] = uint32_t(sources[k].grid[d]);
      c.block[d] = uint32_t(sources[k].block[d]);
    }
    c.sharedBytes = uint32_t(sources[k].sharedBytes);
    c.cubinArchs.assign(cuda.archs.begin(), cuda.archs.end());
    c.cubins.resize(cuda.archs.size());
    c.ptxArch = uint32_t(ptxArch);
  }
  // Jobs: (kernel, architecture) cubins, then one PTX per kernel.
  const size_t perKernel = cuda.archs.size() + 1;
  std::vector<Status> results(sources.size() * perKernel, Status::ok());
  const NvrtcCache cache(cuda.cacheDir);
  std::atomic<size_t> cached{0};
  ThreadPool::global().parallelFor(int64_t(results.size()), [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const size_t k = size_t(job) / perKernel, which = size_t(job) % perKernel;
      const CudaKernel& source = sources[k];
      runtime::CudaKernelCode& c = exe.cudaKernels[k];
      const std::string file = (cuda.emitDir.empty() ? std::string() : cuda.emitDir + "/") + source.name;
      const bool ptx = which == cuda.archs.size();
      const int sm = ptx ? ptxArch : cuda.archs[which];
      const std::string key = NvrtcCache::keyOf(source.source, (ptx ? "compute_" : "sm_") + std::to_string(sm));
      std::string bytes;
      if (std::optional<std::string> hit = cache.load(key)) {
        bytes = std::move(*hit);
        ++cached;
      } else if (ptx) {
        Expected<std::string> out = compilePtx(source.source, file + ".cu", sm);
        if (!out) {
          results[size_t(job)] = out.error();
          continue;
        }
        bytes = std::move(*out);
        cache.store(key, bytes);
      } else {
        Expected<CudaBinary> out = compileCubin(source.source, file + ".cu", sm);
        if (!out) {
          results[size_t(job)] = out.error();
          continue;
        }
        bytes.assign(out->cubin.begin(), out->cubin.end());
        cache.store(key, bytes);
      }
      if (!cuda.emitDir.empty())
        results[size_t(job)] = writeFile(ptx ? file + ".ptx" : file + ".sm_" + std::to_string(sm) + ".cubin", bytes);
      if (ptx) c.ptx = std::move(bytes);
      else c.cubins[which].assign(bytes.begin(), bytes.end());
    }
  });
  model.stats.nvrtcCached = cached;
  model.stats.nvrtcCompiled = results.size() - cached;
  for (const Status& st : results) KILN_TRY(st);
  model.stats.nvrtcMs = timer.elapsedMs();
  KILN_TRY(exe.validate());
  return model;
}

}  // namespace kiln::codegen
