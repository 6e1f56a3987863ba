//===- kiln/support/Npy.h - NumPy .npy tensor files --------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format (versions 1-3, little-endian, C order).
// bf16 has no NumPy dtype: it is written as f32 (exactly) and documented so.
// numpy's string arrays (unicode '<U<n>' and bytes '|S<n>') read as string
// tensors, i64 ids into the string pool (StringPool.h); serializeStringNpy
// writes one back as a unicode array.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln {

Expected<Tensor> parseNpy(const std::string& bytes, const std::string& nameForErrors);
Expected<Tensor> readNpy(const std::string& path);
std::string serializeNpy(const Tensor& tensor);
Status writeNpy(const std::string& path, const Tensor& tensor);
/// A string tensor (ids) as a unicode .npy array.
Expected<std::string> serializeStringNpy(const Tensor& ids);
Status writeStringNpy(const std::string& path, const Tensor& ids);

}  // namespace kiln
