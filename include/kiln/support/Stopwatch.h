//===- kiln/support/Stopwatch.h - Elapsed wall time ---------------*- C++ -*-===//
//
// A steady-clock stopwatch for timing phases (import, preparation) and runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>

namespace kiln {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double elapsedMs() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln
