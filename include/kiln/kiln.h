//===- kiln/kiln.h - Running compiled models (C++ API) ------------*- C++ -*-===//
//
// The embedding API: load a .kiln artifact written by `kiln compile`, query
// its inputs and outputs, run it. Link kiln_runtime only (no LLVM, protobuf
// or compiler). A loaded Model is immutable: run() may be called from many
// threads at once; on the CPU each run gets its own scratch memory, on a GPU
// (a `--target cuda` artifact) runs take turns on the device.
//
//   auto model = kiln::Model::load("resnet50.kiln");
//   if (!model) { std::cerr << model.error().str(); return 1; }
//   kiln::Tensor x = kiln::Tensor::zeros(kiln::DType::F32, (*model)->inputs()[0].dims);
//   auto outputs = (*model)->run({x});
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln {

namespace runtime {
struct Executable;
}

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Dims dims;               ///< -1 where a dim depends on the data or is a dynamic dim (compiled for a shape range)
  bool rankKnown = true;   ///< false: the rank too depends on the data (dims empty; run() returns the shape)
  /// A string tensor, held as i64 ids into the string pool (support/StringPool.h:
  /// stringTensor makes one, tensorStrings reads one).
  bool strings = false;
  /// Per dim, for an artifact compiled with shape ranges: the smallest and
  /// largest values a run may give it and the value the kernels were tuned
  /// for (the three equal dims where it is fixed; -1 where it depends on the data).
  Dims minDims, optDims, maxDims;
  /// Whether some dim is a dynamic dim (its min and max differ).
  bool hasDynamicDims() const { return minDims != maxDims; }
};

/// One event of a traced run: a kernel launch, a host step, a copy or branch,
/// or the run's prologue (inputs checked, scratch taken) and epilogue.
struct TraceEvent {
  std::string name;      ///< the kernel's entry point, the host step's name, "copy", "prologue", ...
  std::string category;  ///< "kernel", "host", "copy", "control", or "runtime" (prologue, epilogue)
  double startUs = 0, durationUs = 0;  ///< from the run's start
  uint64_t bytes = 0;    ///< the bytes its operands address
  std::string ops;       ///< a host step's ops ("NonZero, TopK")
};

/// The events of one run, in the order they ran, and the run's own time.
struct RunTrace {
  std::vector<TraceEvent> events;
  double runUs = 0;
};

/// Runs as the Chrome trace event format (opens in Perfetto and
/// chrome://tracing): each run one "run" event holding its steps' events,
/// the runs one after another on the thread of `process`.
std::string chromeTraceJson(const std::vector<RunTrace>& runs, const std::string& process);

class Model {
 public:
  /// Loads an artifact; ArtifactCorrupt / ArtifactVersion errors say what is
  /// wrong (DeviceUnavailable: a CUDA artifact on a machine without a GPU).
  static Expected<std::unique_ptr<Model>> load(const std::string& path);
  /// As load, from an artifact's bytes in memory (`name` labels errors).
  static Expected<std::unique_ptr<Model>> loadFromMemory(const void* data, size_t size, const std::string& name = "<memory>");
  ~Model();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  /// The CPU the code was compiled for (CUDA: its architectures, "sm_80,sm_90")
  /// and the bytes of scratch memory a run takes.
  const std::string& compiledFor() const;
  uint64_t scratchBytes() const;

  /// Runs once; inputs in the order of inputs(), each of exactly its type
  /// (a dynamic dim any value in its range, the same wherever the dim recurs).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;
  /// As run(), timing every step into `trace` (CPU artifacts; KE4003 for CUDA ones).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, RunTrace& trace) const;

  /// Threads kernels use (process-wide; default: all cores).
  static void setThreads(int threads);

 private:
  Model();
  static Expected<std::unique_ptr<Model>> fromExecutable(runtime::Executable exe, const std::string& path);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
