//===- lib/fuse/KernelCache.cpp - Kernels compiled once per code -----------===//
//
// See kiln/fuse/KernelCache.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/KernelCache.h"

#include <algorithm>
#include <cstdio>

#include "kiln/support/Hash.h"

namespace kiln::fuse {

namespace {

/// A kernel's symbol in the cache's JITs: its code's hash.
std::string cachedName(const std::string& bodyKey) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "fk%016llx", static_cast<unsigned long long>(hashString(bodyKey)));
  return buf;
}

}  // namespace

Expected<CachedModel> KernelCache::lower(ir::Graph& graph, const codegen::CompileOptions& options, size_t* compiled) {
  CachedModel m;
  KILN_ASSIGN(m.lowered, codegen::lowerModel(graph, codegen::KernelTarget::Cpu, options));
  std::vector<codegen::Kernel*> fresh;
  std::vector<std::string> freshKeys, keys;
  for (codegen::LoweredKernel& k : m.lowered.kernels) {
    keys.push_back(codegen::kernelBodyKey(k.kernel));
    if (kernels_.count(keys.back()) || std::count(freshKeys.begin(), freshKeys.end(), keys.back())) continue;
    k.kernel.name = cachedName(keys.back());
    fresh.push_back(&k.kernel);
    freshKeys.push_back(keys.back());
  }
  if (!fresh.empty()) {
    KILN_ASSIGN(std::unique_ptr<codegen::CpuJit> jit, codegen::CpuJit::create());
    KILN_ASSIGN(std::vector<codegen::CpuKernelFn> fns,
                jit->compile(std::vector<const codegen::Kernel*>(fresh.begin(), fresh.end())));
    for (size_t i = 0; i < fresh.size(); ++i) kernels_[freshKeys[i]] = fns[i];
    jits_.push_back(std::move(jit));
    compiledCount_ += fresh.size();
  }
  if (compiled) *compiled = fresh.size();
  std::vector<runtime::KernelEntry> entries;
  for (const std::string& key : keys) entries.push_back(kernels_.at(key));
  KILN_ASSIGN(m.executor, runtime::CpuExecutor::create(m.lowered.executable, std::move(entries)));
  return m;
}

}  // namespace kiln::fuse
