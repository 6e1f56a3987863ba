//===- kiln/runtime/Executable.h - A compiled model ---------------*- C++ -*-===//
//
// What the compiler produces and the runtime runs, with no reference to the
// IR: buffers (inputs, outputs, weights, and intermediates placed in one
// arena by the memory plan), the launch plan (kernel steps with the buffers
// each takes, in order) and the kernels' code (for the CPU target, one
// relocatable object holding every entry point). The artifact file format
// (ArtifactFormat.h) stores exactly this.
//
//===----------------------------------------------------------------------===//
#pragma once

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
  uint64_t bytes() const;
};

struct KernelStep {
  uint32_t kernel = 0;             ///< index into Executable::kernelNames
  std::vector<uint32_t> args;      ///< buffer ids, one per kernel parameter
};

struct Executable {
  std::string target = "cpu";
  std::string cpu;                     ///< the CPU the code was compiled for
  std::vector<std::string> cpuFeatures;  ///< ISA extensions the code needs (checked at load)
  std::vector<BufferSpec> buffers;
  std::vector<Tensor> weights;
  std::vector<std::string> kernelNames;  ///< entry point symbols
  std::vector<std::vector<uint64_t>> kernelParamBytes;  ///< per kernel: bytes each parameter addresses
  std::vector<KernelStep> steps;
  std::vector<uint32_t> inputs, outputs;  ///< buffer ids in model order
  uint64_t arenaBytes = 0;                 ///< peak intermediate memory (the memory plan)
  std::vector<uint8_t> objectCode;         ///< CPU: ELF relocatable object with the entry points

  /// Checks internal consistency (ids in range, arena bounds, weights match); the
  /// error says what is wrong (ArtifactCorrupt).
  Status validate() const;
};

}  // namespace kiln::runtime
