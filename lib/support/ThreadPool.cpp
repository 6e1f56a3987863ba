//===- lib/support/ThreadPool.cpp - Static-schedule thread pool ------------===//
//
// A job is a generation number and a chunk function; each worker takes chunk
// index = worker index, the caller takes the last chunk, and a counter tells
// the caller when all workers finished. One job at a time (a mutex
// serializes callers). Workers and the waiting caller spin for a short while
// (kSpin) before they sleep on a condition variable: a model runs its
// kernels back to back, and waking a sleeping thread through the kernel
// costs tens of microseconds (docs/performance.md, "Small models and the
// thread pool"), which is most of a small kernel's time. A thread that sleeps is counted,
// so a post or a finish notifies only when someone sleeps; the counters and
// the generation are sequentially consistent atomics, so either the poster
// sees the sleeper or the sleeper sees the post.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln {
namespace {
thread_local bool insideWorker = false;

/// How long an idle worker, or a caller waiting for its workers, spins
/// before it sleeps.
constexpr std::chrono::microseconds kSpin{200};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// Spins until done() holds or kSpin has passed; whether it holds.
template <class Done>
bool spinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    cpuRelax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return done();
      sched_yield();  // a thread waiting for this core (more threads than cores) gets it
    }
  }
}
}  // namespace

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::mutex mutex, callMutex;
  std::condition_variable wake, done;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<int> sleepingWorkers{0};
  std::atomic<bool> callerSleeping{false};
  std::atomic<bool> stop{false};
  // Written by the caller before it bumps the generation, read by workers after they see it.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int chunks = 1;

  void runChunk(int c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) (*fn)(begin, end);
  }

  void start(int threads) {
    // The generation now, read here: a worker that read it when it first ran could miss a job posted before.
    const uint64_t current = generation.load();
    for (int w = 0; w + 1 < threads; ++w)
      workers.emplace_back([this, w, current] {
        insideWorker = true;
        uint64_t seen = current;
        for (;;) {
          auto posted = [&] { return stop.load() || generation.load() != seen; };
          if (!spinUntil(posted)) {
            std::unique_lock<std::mutex> lock(mutex);
            sleepingWorkers.fetch_add(1);
            wake.wait(lock, posted);
            sleepingWorkers.fetch_sub(1);
          }
          if (stop.load()) return;
          seen = generation.load();
          if (w < chunks - 1) runChunk(w);  // the caller runs the last chunk
          if (pending.fetch_sub(1) == 1 && callerSleeping.load()) {
            std::lock_guard<std::mutex> lock(mutex);
            done.notify_one();
          }
        }
      });
  }

  /// Posts the job set up in fn, n and chunks to every worker.
  void post() {
    pending.store(int(workers.size()));
    generation.fetch_add(1);
    if (sleepingWorkers.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      wake.notify_all();
    }
  }

  /// Returns when every worker has finished the posted job.
  void waitForWorkers() {
    auto finished = [&] { return pending.load() == 0; };
    if (spinUntil(finished)) return;
    std::unique_lock<std::mutex> lock(mutex);
    callerSleeping.store(true);
    done.wait(lock, finished);
    callerSleeping.store(false);
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop.store(true);
    }
    wake.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
    stop.store(false);
  }
};

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(int(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

ThreadPool::ThreadPool(int threads) : impl_(new Impl) { impl_->start(std::max(threads, 1)); }

ThreadPool::~ThreadPool() {
  impl_->shutdown();
  delete impl_;
}

int ThreadPool::threads() const { return int(impl_->workers.size()) + 1; }

void ThreadPool::setThreads(int threads) {
  std::lock_guard<std::mutex> call(impl_->callMutex);
  impl_->shutdown();
  impl_->start(std::max(threads, 1));
}

namespace {
/// Restricts a thread to one logical CPU, or (cpu < 0) to all of them.
bool setAffinity(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = int(std::max(1u, std::thread::hardware_concurrency()));
  if (cpu >= 0) CPU_SET(cpu % cpus, &set);
  else
    for (int c = 0; c < cpus; ++c) CPU_SET(c, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set) == 0;
}
}  // namespace

bool ThreadPool::pinWorkers(bool pinned) {
  std::lock_guard<std::mutex> call(impl_->callMutex);
  bool ok = true;
  for (size_t w = 0; w < impl_->workers.size(); ++w) ok &= setAffinity(impl_->workers[w].native_handle(), pinned ? int(w) : -1);
  return ok;
}

PinnedThreads::PinnedThreads() {
  cpu_set_t* saved = new cpu_set_t;
  if (pthread_getaffinity_np(pthread_self(), sizeof *saved, saved) != 0) CPU_ZERO(saved);
  saved_ = saved;
  ThreadPool& pool = ThreadPool::global();
  pinned_ = pool.pinWorkers(true) && setAffinity(pthread_self(), pool.threads() - 1);
}

PinnedThreads::~PinnedThreads() {
  ThreadPool::global().pinWorkers(false);
  cpu_set_t* saved = static_cast<cpu_set_t*>(saved_);
  if (CPU_COUNT(saved) > 0) pthread_setaffinity_np(pthread_self(), sizeof *saved, saved);
  else setAffinity(pthread_self(), -1);
  delete saved;
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (insideWorker || impl_->workers.empty() || n == 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(impl_->callMutex);
  impl_->fn = &fn;
  impl_->n = n;
  impl_->chunks = int(std::min<int64_t>(n, threads()));
  impl_->post();
  bool wasInside = insideWorker;
  insideWorker = true;
  impl_->runChunk(impl_->chunks - 1);
  insideWorker = wasInside;
  impl_->waitForWorkers();
}

void runOnThreads(size_t n, int threads, const std::function<void(size_t)>& fn) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<size_t>(size_t(threads), n));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace kiln

extern "C" void kiln_rt_parallel_for(KilnParallelBody body, void* const* args, int64_t n) {
  kiln::ThreadPool::global().parallelFor(n, [&](int64_t begin, int64_t end) { body(args, begin, end); });
}
