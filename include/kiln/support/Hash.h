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

/// hashBytes of a range that arrives in pieces (a file written as it is hashed).
/// The total size seeds the hash, so it is given up front; finish() after
/// exactly that many bytes returns what hashBytes of the whole range returns.
class BytesHasher {
 public:
  explicit BytesHasher(size_t totalSize, uint64_t seed = 0);
  void update(const void* data, size_t size);
  uint64_t finish() const;

 private:
  uint64_t h_, h2_;
  unsigned char carry_[16];  ///< the start of a 16-byte block the last piece ended in
  size_t carried_ = 0, seen_ = 0, total_;
};
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
