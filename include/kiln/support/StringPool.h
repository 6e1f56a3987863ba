//===- kiln/support/StringPool.h - String tensors as ids into a pool -*- C++ -*-===//
//
// kiln holds an ONNX STRING tensor as an i64 tensor of ids into a
// process-wide pool, so that every data-movement op, the artifact format and
// both code generators handle string tensors unchanged (docs/notes/string-tensors.md).
// An id is a hash of the string's bytes, the same in every process: a
// compiled artifact's constant ids mean the same strings in the process that
// runs it, and equal ids mean equal strings (interning a second string with
// an id already taken is an error, never a silent merge). The empty string
// is id 0, so a zero-filled tensor (Pad, ConstantOfShape) holds empty
// strings, as ONNX's default string is.
//
// The pool only grows: an id, once interned, resolves for the life of the process.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln {

/// The ONNX TensorProto.DataType code of STRING.
inline constexpr int kOnnxStringCode = 8;

/// The id of `s`, interned: hash-derived, 0 for "". An error when another
/// string already holds that id.
Expected<int64_t> internString(std::string_view s);
/// The string an interned id stands for; nullopt for an id the pool lacks.
/// The view stays valid for the life of the process.
std::optional<std::string_view> pooledString(int64_t id);
/// The same string NUL-terminated ("" for id 0); null for an id the pool lacks.
/// The pointer stays valid for the life of the process.
const char* pooledCString(int64_t id);

/// The code points of a UTF-8 string; nullopt when it is not valid UTF-8.
std::optional<std::u32string> decodeUtf8(std::string_view s);
/// The UTF-8 encoding of code points.
std::string encodeUtf8(const std::u32string& s);

/// An i64 tensor of the ids of `strings` (row-major, numElements(dims) of them).
Expected<Tensor> stringTensor(const Dims& dims, const std::vector<std::string>& strings);
/// The strings an i64 id tensor stands for; an ExecFailure error naming the
/// first id the pool lacks.
Expected<std::vector<std::string>> tensorStrings(const Tensor& ids);

}  // namespace kiln
