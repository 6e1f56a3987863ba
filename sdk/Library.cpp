//===- sdk/Library.cpp - The translation unit of the SDK's shared libraries ===//
//
// libkiln_runtime.so and libkiln_compiler.so are kiln's static libraries
// linked whole into shared objects (sdk/CMakeLists.txt); a shared library
// needs one source of its own, and this is it. It defines nothing.
//
//===----------------------------------------------------------------------===//
