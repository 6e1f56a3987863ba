//===- kiln/runtime/ObjectLoader.h - Links CPU kernel object code -*- C++ -*-===//
//
// A small in-process linker for the relocatable x86-64 ELF objects that the
// CPU target stores in artifacts: it maps the allocatable sections, resolves
// undefined symbols (the runtime's kiln_rt_parallel_for, libm and libc
// routines), applies the relocations the code generator emits
// (R_X86_64_64, PC32, PLT32, GOTPCREL[X]) through stubs and a small GOT, and
// makes the code executable. Every offset and index in the file is checked:
// a corrupt object gets an ArtifactCorrupt error, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kiln/support/Status.h"

namespace kiln::runtime {

class LoadedObject {
 public:
  static Expected<std::unique_ptr<LoadedObject>> load(const uint8_t* data, size_t size);
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;
  /// Address of a defined global symbol, or null.
  void* symbol(const std::string& name) const;

 private:
  LoadedObject() = default;
  void* base_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, void*> symbols_;
};

/// Whether this CPU has an ISA extension ("avx2", "avx512f", "fma", ...).
bool hostHasFeature(const std::string& feature);

}  // namespace kiln::runtime
