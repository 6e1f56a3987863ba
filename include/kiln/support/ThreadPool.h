//===- kiln/support/ThreadPool.h - Parallel loops for kernels -----*- C++ -*-===//
//
// A fixed pool of worker threads that runs parallel loops: the range is cut
// into one contiguous chunk per thread (static schedule, like OpenMP's
// default), the caller runs a chunk too, and parallelFor returns when all are
// done. Nested calls from inside a worker run serially. Generated CPU kernels
// reach the process-wide pool through the C symbol kiln_rt_parallel_for.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace kiln {

class ThreadPool {
 public:
  /// The process-wide pool (threads = hardware concurrency until setThreads).
  static ThreadPool& global();
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const;
  /// Resizes the pool (>= 1; 1 runs everything on the caller).
  void setThreads(int threads);
  /// Pins worker w to logical CPU w (or, false, lets them run anywhere);
  /// false when the operating system refused.
  bool pinWorkers(bool pinned);
  /// Runs fn(begin, end) over chunks covering [0, n).
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Impl;
  Impl* impl_;
};

/// Runs fn(i) for every i in [0, n) on `threads` short-lived threads (0: one
/// per core; the caller is one of them), each taking the next index: for
/// uneven jobs such as compiling candidates, which must leave the kernel
/// pool free.
void runOnThreads(size_t n, int threads, const std::function<void(size_t)>& fn);

/// While it lives, the global pool's workers are pinned to CPUs 0..n-2 and
/// the constructing thread (which runs the last chunk) to CPU n-1, so timed
/// kernels do not migrate between cores; the destructor restores the
/// thread's affinity and unpins the workers. Threads the pinned thread
/// starts inherit its affinity: start them before or after, not during.
class PinnedThreads {
 public:
  PinnedThreads();
  ~PinnedThreads();
  PinnedThreads(const PinnedThreads&) = delete;
  PinnedThreads& operator=(const PinnedThreads&) = delete;
  bool pinned() const { return pinned_; }

 private:
  void* saved_ = nullptr;  ///< the thread's cpu_set_t before pinning
  bool pinned_ = false;
};

}  // namespace kiln

extern "C" {
/// Body of an outlined parallel loop: runs iterations [begin, end).
typedef void (*KilnParallelBody)(void* const* args, int64_t begin, int64_t end);
/// Runs body over [0, n) on the global pool (what generated kernels call).
void kiln_rt_parallel_for(KilnParallelBody body, void* const* args, int64_t n);
}
