//===- tests/emulation/EmulatedElements.h - Element access for emulated libraries -*- C++ -*-===//
//
// What the emulated vendor libraries (EmulatedCublasLt.cpp, EmulatedCudnn.cpp)
// share: f32 / f16 / bf16 elements read as double and stored rounded once,
// TF32 rounding as tensor cores apply it, and the check that an operand's
// bytes lie in one allocation of the emulated driver (KILN_CUDA_DRIVER), so
// a wrong size or stride is an error, not a silent read of a neighbour;
// and how their calls go onto a stream (enqueueOnStream), so that CUDA
// graph capture records them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kiln/support/Float16.h"

namespace kiln::emulation {

enum class Element { F32, F16, BF16 };

inline size_t elementBytes(Element t) { return t == Element::F32 ? 4 : 2; }

inline double loadElement(const void* base, int64_t index, Element t) {
  if (t == Element::F32) return static_cast<const float*>(base)[index];
  uint16_t bits;
  std::memcpy(&bits, static_cast<const char*>(base) + index * 2, 2);
  return t == Element::F16 ? float(Half::fromBits(bits)) : float(BFloat16::fromBits(bits));
}

inline void storeElement(void* base, int64_t index, Element t, double v) {
  if (t == Element::F32) {
    static_cast<float*>(base)[index] = float(v);
    return;
  }
  uint16_t bits = t == Element::F16 ? Half(float(v)).bits : BFloat16(float(v)).bits;
  std::memcpy(static_cast<char*>(base) + index * 2, &bits, 2);
}

/// f32 rounded to TF32 (10 mantissa bits, to nearest even), as TF32 tensor cores read it.
inline double toTf32(double v) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// A symbol of the emulated driver (KILN_CUDA_DRIVER, already loaded by the runtime); null without one.
inline void* driverSymbol(const char* name) {
  const char* path = std::getenv("KILN_CUDA_DRIVER");
  void* driver = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return driver ? dlsym(driver, name) : nullptr;
}

/// Whether [ptr, ptr + bytes) lies in one allocation of the emulated driver.
inline bool inDeviceMemory(const void* ptr, uint64_t bytes) {
  static auto check = reinterpret_cast<int (*)(const void*, unsigned long long)>(driverSymbol("kiln_emulated_in_device_memory"));
  return check && check(ptr, bytes);
}

/// Runs a library call's `work` in the order of `stream`, as the real
/// libraries enqueue kernels: now, or, while the stream is being captured
/// into a CUDA graph, at each launch of that graph (the emulated driver's
/// kiln_emulated_enqueue; `work` owns copies of what it reads, as a
/// captured call does). False when the driver refuses it (a capture that
/// does not accept library calls).
template <class Work>
bool enqueueOnStream(void* stream, Work work) {
  using Enqueue = int (*)(void*, void (*)(void*), void*, void (*)(void*));
  static auto enqueue = reinterpret_cast<Enqueue>(driverSymbol("kiln_emulated_enqueue"));
  if (!enqueue) {
    work();
    return true;
  }
  auto* owned = new Work(std::move(work));
  return enqueue(
             stream, [](void* w) { (*static_cast<Work*>(w))(); }, owned, [](void* w) { delete static_cast<Work*>(w); }) == 0;
}

}  // namespace kiln::emulation
