//===- lib/support/Hash.cpp - Word-at-a-time 64-bit hash -------------------===//
//
// A simple multiply-xorshift hash over 8-byte words with a tail, finalised with
// the splitmix64 mixer. Not cryptographic; stable across platforms (little endian).
// hashBytes is a BytesHasher fed the whole range at once.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Hash.h"

#include <algorithm>
#include <cstring>

#include "kiln/support/Status.h"

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

inline void absorbBlock(uint64_t& h, uint64_t& h2, const unsigned char* b) {
  uint64_t x, y;
  std::memcpy(&x, b, 8);
  std::memcpy(&y, b + 8, 8);
  h = (h ^ x) * 0x9fb21c651e98df25ull;
  h2 = (h2 ^ y) * 0xc2b2ae3d27d4eb4full;
  h = (h << 23) | (h >> 41);
}
}  // namespace

BytesHasher::BytesHasher(size_t totalSize, uint64_t seed)
    : h_(seed ^ (0x9e3779b97f4a7c15ull * (totalSize + 1))), h2_(0x2545f4914f6cdd1dull), total_(totalSize) {}

void BytesHasher::update(const void* data, size_t size) {
  KILN_CHECK(seen_ + size <= total_, "BytesHasher: ", seen_ + size, " bytes of ", total_);
  seen_ += size;
  if (size == 0) return;  // data may be null (an empty tensor's): memcpy must not see it
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = h_, h2 = h2_;  // locals: the bytes read cannot alias them
  if (carried_) {             // complete the block the last piece started
    size_t take = std::min(size, sizeof carry_ - carried_);
    std::memcpy(carry_ + carried_, p, take);
    carried_ += take;
    p += take;
    size -= take;
    if (carried_ < sizeof carry_) return;
    absorbBlock(h, h2, carry_);
    carried_ = 0;
  }
  size_t whole = size / 16 * 16;
  for (size_t i = 0; i < whole; i += 16) absorbBlock(h, h2, p + i);
  std::memcpy(carry_, p + whole, size - whole);
  carried_ = size - whole;
  h_ = h;
  h2_ = h2;
}

uint64_t BytesHasher::finish() const {
  KILN_CHECK(seen_ == total_, "BytesHasher: finished after ", seen_, " bytes of ", total_);
  uint64_t h = h_, tail = 0;
  size_t at = 0, rest = carried_;
  if (rest >= 8) {
    uint64_t a;
    std::memcpy(&a, carry_, 8);
    h = (h ^ a) * 0x9fb21c651e98df25ull;
    at = 8;
    rest -= 8;
  }
  std::memcpy(&tail, carry_ + at, rest);
  uint64_t h2 = (h2_ ^ tail ^ rest) * 0xc2b2ae3d27d4eb4full;
  return mix(h ^ mix(h2));
}

uint64_t hashBytes(const void* data, size_t size, uint64_t seed) {
  BytesHasher hasher(size, seed);
  hasher.update(data, size);
  return hasher.finish();
}

}  // namespace kiln
