//===- kiln/runtime/Executable.h - A compiled model ---------------*- C++ -*-===//
//
// What the compiler produces and the runtime runs, with no reference to the
// IR: buffers (inputs, outputs, weights, and intermediates placed in one
// arena by the memory plan), the launch plan (kernel steps with the buffers
// each takes, in order) and the kernels' code (for the CPU target, one
// relocatable object holding every entry point). Ops no template compiles,
// and everything with a data-dependent shape, run as host steps: a small
// graph in kiln's text IR that the runtime executes with the reference
// kernels; their dynamic results live outside the arena. An If whose
// branches compile becomes control steps around the branches' own steps:
// a branch step skips the then block when the condition is false, a jump
// skips the else block after the then block, and copy steps move each
// block's results into the If's buffers. Jumps only go forward, so a run
// executes a subsequence of the steps in order. CUDA only: a
// library step runs a vendor library's routine instead of generated code
// (a cuBLASLt matmul or a cuDNN convolution with a fused epilogue; a
// library tactic). Dynamic dims (DimSymbol) are dims of the inputs that
// vary between runs within a range: a buffer's shape and a kernel step's
// run-time extents are expressions over them, evaluated per run, and every
// buffer is sized for their maxima. The artifact file format (Artifact.h)
// stores exactly this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/DimExpr.h"
#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln::runtime {

/// A dynamic dim of the model's inputs: in a run, its value is dim `axis` of
/// input `input` (model order), which must lie in [min, max]; the kernels are
/// tuned for `opt`.
struct DimSymbol {
  std::string name;
  uint32_t input = 0, axis = 0;
  int64_t min = 0, opt = 0, max = 0;
};
/// The dynamic dims' values in one run, by name.
using SymbolValues = std::map<std::string, int64_t>;

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
  bool unknownRank = false;  ///< dynamic, and the rank too is known only at run time (dims empty): an If whose branches differ in rank
  /// Dims that depend on the dynamic dims, one expression per dim (empty: a
  /// static buffer); `dims` then hold its capacity, the dims at their maxima,
  /// and a run's elements lie packed at the start.
  std::vector<DimExpr> shape = {};
  uint64_t bytes() const;  ///< 0 for a dynamic buffer; the capacity for one with a shape
  /// Its dims in a run (dims when it has no shape).
  Expected<Dims> runDims(const SymbolValues& values) const;
  /// Whether `t` fits this buffer (a dynamic buffer's -1 dims accept any size).
  bool accepts(const Tensor& t) const;
};

enum class StepKind : uint8_t { Kernel, Host, Library, Branch, Jump, Copy };
const char* stepKindName(StepKind k);

/// A branch step's condition as stored in its buffer: true when any byte is nonzero.
bool conditionHolds(const void* data, uint64_t bytes);

struct KernelStep {
  StepKind kind = StepKind::Kernel;
  uint32_t kernel = 0;             ///< index into Executable::kernelNames, hostGraphs (host) or libraryCalls
                                   ///< (library); branch and jump: the step to go on at (a later one)
  std::vector<uint32_t> args;      ///< buffer ids: one per kernel parameter; host: its inputs, then its outputs;
                                   ///< library: its operands (LibraryCall); branch: the condition (one
                                   ///< element, false when zero); jump: none; copy: source, destination
  std::vector<DimExpr> extents = {};  ///< kernel: its run-time extents' values, passed after the buffers
};

/// Epilogues a library routine applies to its result.
enum class LibraryEpilogue : uint8_t { None, Bias, Relu, BiasRelu };
const char* libraryEpilogueName(LibraryEpilogue e);

/// The vendor routine a library step calls.
enum class LibraryRoutine : uint8_t { CublasLtMatmul, CudnnConv };
/// "cuBLASLt" or "cuDNN".
const char* libraryName(LibraryRoutine r);
/// Inverse of libraryName; nullopt for another name.
std::optional<LibraryRoutine> libraryRoutineNamed(std::string_view name);
/// The version of the library this process loads for `r` (KILN_CUBLASLT /
/// KILN_CUDNN, else the installed one), as "major.minor.patch"; KE5005 when
/// it is absent. Tuning records of library calls carry it: a call measured
/// on another version of the library no longer decides the group.
Expected<std::string> libraryVersion(LibraryRoutine r);

/// A 2-D convolution's shape (NCHW data, KCRS weights, symmetric padding);
/// the batch is LibraryCall::batch.
struct ConvGeometry {
  int64_t channels = 1, height = 1, width = 1;  ///< input C, H, W
  int64_t outChannels = 1, kernelH = 1, kernelW = 1;
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, groups = 1;
  /// The result's spatial size (< 1 for a window that does not fit).
  int64_t outHeight() const { return (height + 2 * padH - dilationH * (kernelH - 1) - 1) / strideH + 1; }
  int64_t outWidth() const { return (width + 2 * padW - dilationW * (kernelW - 1) - 1) / strideW + 1; }
};

/// A library step, all tensors row-major, accumulation in f32.
///  - CublasLtMatmul: D[batch][m][n] = epilogue(alpha * op(A) x op(B) (+ Z)
///    (+ bias[n])) with cuBLASLt (Z as its C, beta 1). Operands (step args):
///    A, B, bias (with a Bias epilogue), Z (residual: D's shape), D. A is
///    [batch][m][k] (transA: [k][m]); B is [k][n] (transB: [n][k]), one per
///    batch or, with batchB = false, one for all.
///  - CudnnConv: Y = epilogue(conv(X, W) (+ bias[c]) (+ Z)) with cuDNN, the
///    ReLU last. Operands: X [batch][C][H][W], W [K][C/groups][R][S], bias [K]
///    (with a Bias epilogue), Z (residual: Y's shape), Y [batch][K][P][Q].
struct LibraryCall {
  std::string name;  ///< l<group id>_<ops>, for reports and profiles
  LibraryRoutine routine = LibraryRoutine::CublasLtMatmul;
  DType dtype = DType::F32;  ///< of every operand
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool transA = false, transB = false, batchB = true;
  float alpha = 1.0f;
  ConvGeometry conv;  ///< CudnnConv only
  LibraryEpilogue epilogue = LibraryEpilogue::None;
  bool residual = false;   ///< Z is added before the ReLU
  bool allowTf32 = false;  ///< f32 products on TF32 tensor cores
  bool hasBias() const { return epilogue == LibraryEpilogue::Bias || epilogue == LibraryEpilogue::BiasRelu; }
  bool hasRelu() const { return epilogue == LibraryEpilogue::Relu || epilogue == LibraryEpilogue::BiasRelu; }
  size_t numOperands() const { return 3 + hasBias() + residual; }
  /// Whether its shape is one its routine can run (sizes positive, the convolution's window fitting).
  bool wellFormed() const;
  /// Elements of each operand, in the step's order.
  std::vector<uint64_t> operandElements() const;
  /// "f16 32x128x768x768 bias" (type, batch x m x n x k, epilogue), or for a
  /// convolution "f32 conv 1x64x56x56 -> 64 3x3 s1x1 p1x1 d1x1 g1 bias+relu+residual".
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
  std::vector<std::vector<int64_t>> kernelExtentMax;   ///< per kernel: each run-time extent's largest value
                                                       ///< (an empty table: no kernel takes any)
  std::vector<DimSymbol> symbols;                      ///< the dynamic dims (none: every shape fixed)
  std::vector<HostGraph> hostGraphs;
  std::vector<KernelStep> steps;
  std::vector<uint32_t> inputs, outputs;  ///< buffer ids in model order
  uint64_t arenaBytes = 0;                 ///< peak intermediate memory (the memory plan)
  std::vector<std::vector<uint8_t>> objectCode;  ///< CPU: ELF relocatable objects (kernels compiled in parts) with the entry points
  std::vector<CudaKernelCode> cudaKernels; ///< CUDA: per kernelNames entry
  std::vector<LibraryCall> libraryCalls;   ///< CUDA: what library steps run
  /// The strings that string tensors among the constants (weights and host
  /// steps' graphs) name by id; loading the artifact interns them, so that
  /// those ids resolve in the process that runs it (support/StringPool.h).
  std::vector<std::string> strings;
  /// Positions among `inputs` and `outputs` of the string tensors (i64 ids).
  std::vector<uint32_t> stringInputs, stringOutputs;

  /// The CPU object code's size, all parts.
  uint64_t objectCodeBytes() const;
  /// Checks internal consistency (ids in range, arena bounds, weights match); the
  /// error says what is wrong (ArtifactCorrupt).
  Status validate() const;
  /// Checks run-time inputs against the declared inputs and the dynamic
  /// dims' ranges (ExecInput, naming the input, dim and range); the dynamic
  /// dims' values in this run.
  Expected<SymbolValues> checkInputs(const std::vector<Tensor>& inputs) const;
};

}  // namespace kiln::runtime
