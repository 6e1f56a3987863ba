//===- kiln/runtime/Artifact.h - The .kiln file format ------------*- C++ -*-===//
//
// One file holds an Executable: an 8-byte magic "KILNART\0", the format
// version, the payload length and a 64-bit checksum of the payload, then the
// payload (target, CPU and ISA features, buffers, launch plan, memory plan,
// kernel names, object code, weights). Reading checks all of it: a truncated
// or modified file is ArtifactCorrupt, another format version or a target
// this runtime cannot run is ArtifactVersion; nothing is trusted before the
// checksum matches, and every count and length is bounds-checked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

// 2: host steps, dynamic buffers; 3: CUDA kernels; 4: library steps; 5: cuDNN convolutions; 6: CPU code in
// several objects; 7: branch, jump and copy steps (compiled If); 8: dynamic dims, shapes over them, run-time extents;
// 9: the string table.
inline constexpr uint32_t kArtifactFormatVersion = 9;

std::vector<uint8_t> serializeExecutable(const Executable& exe);
Expected<Executable> deserializeExecutable(const uint8_t* data, size_t size);

Status saveArtifact(const Executable& exe, const std::string& path);
Expected<Executable> loadArtifact(const std::string& path);

}  // namespace kiln::runtime
