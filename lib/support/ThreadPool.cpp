//===- lib/support/ThreadPool.cpp - Static-schedule thread pool ------------===//
//
// Workers sleep on a condition variable until a job (a generation number and
// a chunk function) is posted; each takes chunk index = worker index, the
// caller takes the last chunk, and a counter tells the caller when all
// workers finished. One job at a time (a mutex serializes callers).
//
//===----------------------------------------------------------------------===//
#include "kiln/support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <vector>

namespace kiln {
namespace {
thread_local bool insideWorker = false;
}

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::mutex mutex, callMutex;
  std::condition_variable wake, done;
  uint64_t generation = 0;
  int pending = 0;
  bool stop = false;
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int chunks = 1;

  void runChunk(int c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) (*fn)(begin, end);
  }

  void start(int threads) {
    for (int w = 0; w + 1 < threads; ++w)
      workers.emplace_back([this, w] {
        insideWorker = true;
        uint64_t seen = 0;
        for (;;) {
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait(lock, [&] { return stop || generation != seen; });
          if (stop) return;
          seen = generation;
          bool mine = w < chunks - 1;  // the caller runs the last chunk
          lock.unlock();
          if (mine) runChunk(w);
          lock.lock();
          if (--pending == 0) done.notify_one();
        }
      });
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
    stop = false;
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
  int chunks = int(std::min<int64_t>(n, threads()));
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->fn = &fn;
    impl_->n = n;
    impl_->chunks = chunks;
    impl_->pending = int(impl_->workers.size());
    ++impl_->generation;
  }
  impl_->wake.notify_all();
  bool wasInside = insideWorker;
  insideWorker = true;
  impl_->runChunk(chunks - 1);
  insideWorker = wasInside;
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->done.wait(lock, [&] { return impl_->pending == 0; });
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
