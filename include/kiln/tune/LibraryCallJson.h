//===- kiln/tune/LibraryCallJson.h - A library call as JSON -------*- C++ -*-===//
//
// How batch mode writes a library call (runtime::LibraryCall: a cuBLASLt
// matmul or a cuDNN convolution with its epilogue) into a candidate
// manifest and how kiln-measure reads it back: a JSON object with the
// routine ("cuBLASLt", "cuDNN"), the type, the shape, the transposes, alpha,
// the convolution's geometry and the epilogue. Reading checks every field
// and the call's shape (LibraryCall::wellFormed), so a damaged manifest is
// a FileFormat error naming the field, not a call a library is handed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/runtime/Executable.h"

namespace kiln::tune {

std::string libraryCallJson(const runtime::LibraryCall& call);
Expected<runtime::LibraryCall> parseLibraryCallJson(const std::string& text);

}  // namespace kiln::tune
