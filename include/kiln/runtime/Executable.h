//===- kiln/runtime/Executable.h - A compiled model ---------------*- C++ -*-===//
//
// What the compiler produces and the runtime runs, with no reference to the
// IR: buffers (inputs, outputs, weights, and intermediates placed in one
// arena by the memory plan), the launch plan (kernel steps with the buffers
// each takes, in order) and the kernels' code (for the CPU target, one
// relocatable object holding every entry point). Ops no template compiles,
// and everything with a data-dependent shape, run as host steps: a small
// graph in kiln's text IR that the runtime executes with the reference
// kernels; their dynamic results live outside the arena. CUDA only: a
// library step runs a vendor library's routine instead of generated code
// (cuBLASLt matmul with a fused bias/ReLU epilogue; a library tactic). The
// artifact file format (Artifact.h) stores exactly this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln::runtime {

enum class BufferKind : uint8_t { Input, Output, Weight, Intermediate };
const char* bufferKindName(BufferKind k);

struct BufferSpec {
  std::string name;
  DType dtype = DType::F32;
  Dims dims;
  BufferKind kind = BufferKind::Intermediate;
  uint32_t index = 0;    ///< Input/Output: position among the model's inputs/outputs; Weight: index in weights
  uint64_t offset = 0;   ///< Intermediate: byte offset in the arena
  int32_t aliasOf = -1;  ///< Output that is another buffer (an input or weight): copied after the run
  bool dynamic = false;  ///< shape known only at run time (dims hold -1 there); written by host steps only
  uint64_t bytes() const;  ///< 0 for a dynamic buffer
  /// Whether `t` fits this buffer (a dynamic buffer's -1 dims accept any size).
  bool accepts(const Tensor& t) const;
};

enum class StepKind : uint8_t { Kernel, Host, Library };

struct KernelStep {
  StepKind kind = StepKind::Kernel;
  uint32_t kernel = 0;             ///< index into Executable::kernelNames, hostGraphs (host) or libraryCalls (library)
  std::vector<uint32_t> args;      ///< buffer ids: one per kernel parameter; host: its inputs, then its outputs;
                                   ///< library: its operands (LibraryCall)
};

/// Epilogues a library routine applies to its result.
enum class LibraryEpilogue : uint8_t { None, Bias, Relu, BiasRelu };
const char* libraryEpilogueName(LibraryEpilogue e);

/// A library step: D[batch][m][n] = epilogue(alpha * op(A) x op(B) (+ bias[n]))
/// with cuBLASLt, all row-major. Operands (step args): A, B, bias (with a
/// Bias epilogue), D. A is [batch][m][k] (transA: [k][m]); B is [k][n]
/// (transB: [n][k]), one per batch or, with batchB = false, one for all.
struct LibraryCall {
  std::string name;  ///< l<group id>_<ops>, for reports and profiles
  DType dtype = DType::F32;  ///< of A, B, bias and D (accumulation in f32)
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool transA = false, transB = false, batchB = true;
  float alpha = 1.0f;
  LibraryEpilogue epilogue = LibraryEpilogue::None;
  bool allowTf32 = false;  ///< f32 products on TF32 tensor cores
  size_t numOperands() const { return epilogue == LibraryEpilogue::Bias || epilogue == LibraryEpilogue::BiasRelu ? 4 : 3; }
  /// "f16 32x128x768x768 bias" (type, batch x m x n x k, epilogue).
  std::string describe() const;
};

/// A piece of the model the runtime runs with its reference kernels.
struct HostGraph {
  std::string name;   ///< h<group id>_<first op>
  std::string text;   ///< a kiln text-IR module; its main graph's inputs and outputs are the step's
  uint32_t numInputs = 0, numOutputs = 0;
  std::vector<std::string> ops;  ///< the ops it runs, for reports
};

/// CUDA: one kernel's code (cubins per architecture, PTX for newer GPUs)
/// and launch shape.
struct CudaKernelCode {
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t sharedBytes = 0;                  ///< static shared memory per block
  std::vector<uint32_t> cubinArchs;          ///< sm numbers, e.g. 80, 90
  std::vector<std::vector<uint8_t>> cubins;  ///< one per cubinArchs entry
  uint32_t ptxArch = 0;                      ///< compute_XX the PTX targets (0: no PTX)
  std::string ptx;
};

struct Executable {
  std::string target = "cpu";          ///< "cpu" or "cuda"
  std::string cpu;                     ///< the CPU the code was compiled for (cuda: its architectures, "sm_80,sm_90")
  std::vector<std::string> cpuFeatures;  ///< ISA extensions the code needs (checked at load)
  std::vector<BufferSpec> buffers;
  std::vector<Tensor> weights;
  std::vector<std::string> kernelNames;  ///< entry point symbols
  std::vector<std::vector<uint64_t>> kernelParamBytes;  ///< per kernel: bytes each parameter addresses
  std::vector<HostGraph> hostGraphs;
  std::vector<KernelStep> steps;
  std::vector<uint32_t> inputs, outputs;  ///< buffer ids in model order
  uint64_t arenaBytes = 0;                 ///< peak intermediate memory (the memory plan)
  std::vector<uint8_t> objectCode;         ///< CPU: ELF relocatable object with the entry points
  std::vector<CudaKernelCode> cudaKernels; ///< CUDA: per kernelNames entry
  std::vector<LibraryCall> libraryCalls;   ///< CUDA: what library steps run

  /// Checks internal consistency (ids in range, arena bounds, weights match); the
  /// error says what is wrong (ArtifactCorrupt).
  Status validate() const;
  /// Checks run-time inputs against the declared inputs (ExecInput).
  Status checkInputs(const std::vector<Tensor>& inputs) const;
};

}  // namespace kiln::runtime
