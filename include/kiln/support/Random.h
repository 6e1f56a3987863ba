//===- kiln/support/Random.h - Seeded, reproducible random numbers -*- C++ -*-===//
//
// splitmix64: a tiny generator whose sequence depends only on its seed (no
// standard-library distribution whose output varies between library
// versions), for everything kiln does "at random" that must be reproducible
// from --seed: pass-ordering strategies, tuning strategies, k-means.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kiln {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n); n > 0.
  size_t below(size_t n) { return size_t(next() % n); }
  /// Uniform in [0, 1).
  double unit() { return double(next() >> 11) * 0x1.0p-53; }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace kiln
