//===- lib/support/Hash.cpp - Word-at-a-time 64-bit hash -------------------===//
//
// A simple multiply-xorshift hash over 8-byte words with a tail, finalised with
// the splitmix64 mixer. Not cryptographic; stable across platforms (little endian).
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Hash.h"

#include <cstring>

namespace kiln {
namespace {
inline uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
}  // namespace

uint64_t hashBytes(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (size + 1));
  uint64_t h2 = 0x2545f4914f6cdd1dull;
  size_t i = 0;
  for (; i + 16 <= size; i += 16) {
    uint64_t a, b;
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    h = (h ^ a) * 0x9fb21c651e98df25ull;
    h2 = (h2 ^ b) * 0xc2b2ae3d27d4eb4full;
    h = (h << 23) | (h >> 41);
  }
  uint64_t tail = 0;
  size_t rest = size - i;
  if (rest >= 8) {
    uint64_t a;
    std::memcpy(&a, p + i, 8);
    h = (h ^ a) * 0x9fb21c651e98df25ull;
    i += 8;
    rest -= 8;
  }
  std::memcpy(&tail, p + i, rest);
  h2 = (h2 ^ tail ^ rest) * 0xc2b2ae3d27d4eb4full;
  return mix(h ^ mix(h2));
}

}  // namespace kiln
