//===- kiln/support/Hash.h - Fast non-cryptographic 64-bit hashing -*- C++ -*-===//
//
// Hashing used for structural hashes of IR and content hashes of weights and
// cache keys. Stable across runs and machines (no per-process seed).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

/// 64-bit hash of a byte range; word-at-a-time, fast on large weights.
uint64_t hashBytes(const void* data, size_t size, uint64_t seed = 0);
inline uint64_t hashString(std::string_view s, uint64_t seed = 0) {
  return hashBytes(s.data(), s.size(), seed);
}
/// Order-dependent combination of two hashes.
inline uint64_t hashCombine(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

}  // namespace kiln
