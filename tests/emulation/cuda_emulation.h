//===- tests/emulation/cuda_emulation.h - CUDA C on the CPU ---------------===//
//
// Force-included (g++ -include) before a generated CUDA C file so that the
// exact source kiln hands to NVRTC compiles and runs on the CPU. Each block
// runs on the calling thread; each CUDA thread of the block is a fiber
// (ucontext) with its own stack, so locals are per thread and `__shared__`
// (a function-local static here) is per block. `__syncthreads()` parks the
// fiber until every thread of the block reached a barrier; warp shuffles and
// `__syncwarp()` park it until every lane of its warp (32 consecutive
// threads) did; so do tensor-core mma instructions (kiln_mma_* below). A thread that finishes while others wait at a barrier, or a
// barrier no fiber can pass, is reported as an error instead of hanging.
//
// A launch: kiln_emulation::launch(grid, block, [&] { kernel(args...); }).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// CUDA's 16-byte vector types (kernels read and write them whole).
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

using std::isnan;
using std::signbit;

inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline float __uint_as_float(unsigned bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline double __longlong_as_double(long long bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

namespace kiln_emulation {

constexpr unsigned kWarpSize = 32;
enum class FiberState { Ready, AtBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  FiberState state = FiberState::Ready;
  dim3 thread;
  unsigned linear = 0;  ///< x + y * bx + z * bx * by
};

/// Where one lane's fragments of a tensor-core mma are.
struct MmaFragments {
  float* c;
  const float* a;
  const float* b;
};

struct Launch {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  size_t current = 0;
  const std::function<void()>* body = nullptr;
  std::vector<std::vector<uint64_t>> warpSlots;  ///< per warp, per lane: the value a shuffle publishes
  std::vector<std::vector<MmaFragments>> mmaSlots;  ///< per warp, per lane: an mma's fragments
};

inline Launch* active = nullptr;
inline dim3 threadIdx_, blockIdx_, blockDim_, gridDim_;

inline void fiberMain() {
  Launch& l = *active;
  (*l.body)();
  Fiber& f = l.fibers[l.current];
  f.state = FiberState::Done;
  swapcontext(&f.context, &l.scheduler);
}

/// Parks the running fiber in `state` and returns when the scheduler resumes it.
inline void park(FiberState state) {
  Launch& l = *active;
  Fiber& f = l.fibers[l.current];
  f.state = state;
  swapcontext(&f.context, &l.scheduler);
}

/// Runs one block to completion; "" or what went wrong.
inline std::string runBlock(Launch& l) {
  for (;;) {
    for (size_t i = 0; i < l.fibers.size(); ++i) {
      if (l.fibers[i].state != FiberState::Ready) continue;
      l.current = i;
      threadIdx_ = l.fibers[i].thread;
      swapcontext(&l.scheduler, &l.fibers[i].context);
    }
    size_t done = 0, atBarrier = 0;
    for (const Fiber& f : l.fibers) {
      done += f.state == FiberState::Done;
      atBarrier += f.state == FiberState::AtBarrier;
    }
    if (done == l.fibers.size()) return "";
    // Warps whose live lanes all wait at a warp barrier go on.
    bool released = false;
    for (size_t w = 0; w * kWarpSize < l.fibers.size(); ++w) {
      size_t end = std::min(l.fibers.size(), (w + 1) * kWarpSize), live = 0, waiting = 0;
      for (size_t i = w * kWarpSize; i < end; ++i) {
        live += l.fibers[i].state != FiberState::Done;
        waiting += l.fibers[i].state == FiberState::AtWarpBarrier;
      }
      if (live && waiting == live) {
        for (size_t i = w * kWarpSize; i < end; ++i)
          if (l.fibers[i].state == FiberState::AtWarpBarrier) l.fibers[i].state = FiberState::Ready;
        released = true;
      }
    }
    if (released) continue;
    if (atBarrier == l.fibers.size()) {
      for (Fiber& f : l.fibers) f.state = FiberState::Ready;
      continue;
    }
    if (atBarrier && done)
      return "__syncthreads() divergence in block (" + std::to_string(blockIdx_.x) + ", " + std::to_string(blockIdx_.y) +
             ", " + std::to_string(blockIdx_.z) + "): " + std::to_string(done) + " threads finished while " +
             std::to_string(atBarrier) + " wait at a barrier";
    return "deadlock in block (" + std::to_string(blockIdx_.x) + ", " + std::to_string(blockIdx_.y) + ", " +
           std::to_string(blockIdx_.z) + "): threads wait at barriers of different kinds";
  }
}

/// Runs `kernel` (a call of the __global__ function) over the grid; "" or the error.
inline std::string launch(dim3 grid, dim3 block, const std::function<void()>& kernel) {
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024) return "block of " + std::to_string(threads) + " threads";
  constexpr size_t kStack = 64 * 1024;
  Launch l;
  l.body = &kernel;
  l.fibers.resize(threads);
  l.warpSlots.assign((threads + kWarpSize - 1) / kWarpSize, std::vector<uint64_t>(kWarpSize, 0));
  for (Fiber& f : l.fibers) f.stack.reset(new char[kStack]);
  Launch* outer = active;
  active = &l;
  gridDim_ = grid;
  blockDim_ = block;
  std::string error;
  for (unsigned bz = 0; bz < grid.z && error.empty(); ++bz)
    for (unsigned by = 0; by < grid.y && error.empty(); ++by)
      for (unsigned bx = 0; bx < grid.x && error.empty(); ++bx) {
        blockIdx_ = {bx, by, bz};
        for (size_t i = 0; i < threads; ++i) {
          Fiber& f = l.fibers[i];
          f.state = FiberState::Ready;
          f.linear = unsigned(i);
          f.thread = {unsigned(i % block.x), unsigned(i / block.x % block.y), unsigned(i / (size_t(block.x) * block.y))};
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = kStack;
          f.context.uc_link = nullptr;
          makecontext(&f.context, fiberMain, 0);
        }
        error = runBlock(l);
      }
  active = outer;
  return error;
}

/// A shuffle: every lane publishes `v`, waits for its warp, reads lane `source`'s.
template <class T>
T exchange(T v, unsigned source) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move at most 8 bytes");
  Launch& l = *active;
  const unsigned lane = l.fibers[l.current].linear % kWarpSize, warp = l.fibers[l.current].linear / kWarpSize;
  std::vector<uint64_t>& slots = l.warpSlots[warp];
  std::memcpy(&slots[lane], &v, sizeof(T));
  park(FiberState::AtWarpBarrier);
  T out;
  std::memcpy(&out, &slots[source % kWarpSize], sizeof(T));
  park(FiberState::AtWarpBarrier);  // nobody overwrites a slot before all have read
  return out;
}

inline unsigned laneId() { return active->fibers[active->current].linear % kWarpSize; }

// --- tensor cores --------------------------------------------------------
// PTX mma.sync.m16n8k16 (f16, bf16) and m16n8k8 (tf32) with f32 accumulate,
// from the per-lane fragment tables in the PTX ISA ("Matrix Fragments for
// mma.m16n8k16 / mma.m16n8k8"), written out here independently of kiln's
// own layout functions: each lane publishes where its fragments are, the
// warp meets, every lane rebuilds A and B from all 32 lanes' fragments and
// computes its four C elements, and the warp meets again before any lane
// may overwrite a fragment.
enum class MmaInput { F16, BF16, TF32 };

inline float roundToInput(float x, MmaInput in) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if (in == MmaInput::F16) return float(_Float16(x));
  if ((bits & 0x7fffffffu) >= 0x7f800000u) return x;
  if (in == MmaInput::BF16) bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  else bits = (bits + 0x1000u) & 0xffffe000u;  // tf32: 10 mantissa bits, nearest, ties away
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

inline void mmaSync(MmaInput in, float* c, const float* a, const float* b) {
  Launch& l = *active;
  const unsigned linear = l.fibers[l.current].linear, lane = linear % kWarpSize, warp = linear / kWarpSize;
  if (l.mmaSlots.size() <= warp) l.mmaSlots.resize(warp + 1, std::vector<MmaFragments>(kWarpSize));
  l.mmaSlots[warp][lane] = {c, a, b};
  park(FiberState::AtWarpBarrier);
  const bool k16 = in != MmaInput::TF32;
  const int kDepth = k16 ? 16 : 8;
  float A[16][16] = {}, B[16][8] = {};
  for (int t = 0; t < 32; ++t) {
    const MmaFragments& f = l.mmaSlots[warp][size_t(t)];
    const int group = t >> 2, member = t & 3;
    if (k16) {
      // A: a0..a7; rows group (a0,a1,a4,a5) / group+8 (a2,a3,a6,a7); cols member*2+(i&1) (+8 for a4..a7).
      for (int i = 0; i < 8; ++i) {
        const int row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
        const int col = member * 2 + (i & 1) + (i >= 4 ? 8 : 0);
        A[row][col] = roundToInput(f.a[i], in);
      }
      // B: b0..b3; rows member*2+(i&1) (+8 for b2,b3); col group.
      for (int i = 0; i < 4; ++i) B[member * 2 + (i & 1) + (i >= 2 ? 8 : 0)][group] = roundToInput(f.b[i], in);
    } else {
      // A: a0..a3; rows group (a0,a2) / group+8 (a1,a3); cols member (a0,a1) / member+4 (a2,a3).
      for (int i = 0; i < 4; ++i) A[(i == 0 || i == 2) ? group : group + 8][i < 2 ? member : member + 4] = roundToInput(f.a[i], in);
      // B: b0, b1; rows member / member+4; col group.
      for (int i = 0; i < 2; ++i) B[member + 4 * i][group] = roundToInput(f.b[i], in);
    }
  }
  // C: c0..c3; rows group (c0,c1) / group+8 (c2,c3); cols member*2+(i&1).
  const int group = int(lane >> 2), member = int(lane & 3);
  float d[4];
  for (int i = 0; i < 4; ++i) {
    const int row = i < 2 ? group : group + 8, col = member * 2 + (i & 1);
    float sum = c[i];
    for (int k = 0; k < kDepth; ++k) sum += A[row][k] * B[k][col];
    d[i] = sum;
  }
  park(FiberState::AtWarpBarrier);  // every lane has read every fragment
  for (int i = 0; i < 4; ++i) c[i] = d[i];
}

}  // namespace kiln_emulation

#define KILN_EMULATED_MMA
inline void kiln_mma_m16n8k16_f16(float* c, const float* a, const float* b) {
  kiln_emulation::mmaSync(kiln_emulation::MmaInput::F16, c, a, b);
}
inline void kiln_mma_m16n8k16_bf16(float* c, const float* a, const float* b) {
  kiln_emulation::mmaSync(kiln_emulation::MmaInput::BF16, c, a, b);
}
inline void kiln_mma_m16n8k8_tf32(float* c, const float* a, const float* b) {
  kiln_emulation::mmaSync(kiln_emulation::MmaInput::TF32, c, a, b);
}

#define threadIdx (kiln_emulation::threadIdx_)
#define blockIdx (kiln_emulation::blockIdx_)
#define blockDim (kiln_emulation::blockDim_)
#define gridDim (kiln_emulation::gridDim_)
#define warpSize (int(kiln_emulation::kWarpSize))

inline void __syncthreads() { kiln_emulation::park(kiln_emulation::FiberState::AtBarrier); }
inline void __syncwarp(unsigned = 0xffffffffu) { kiln_emulation::park(kiln_emulation::FiberState::AtWarpBarrier); }

template <class T>
T __shfl_sync(unsigned, T v, int srcLane, int width = 32) {
  unsigned lane = kiln_emulation::laneId();
  return kiln_emulation::exchange(v, lane / unsigned(width) * unsigned(width) + unsigned(srcLane) % unsigned(width));
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  unsigned lane = kiln_emulation::laneId();
  return kiln_emulation::exchange(v, lane % unsigned(width) + delta < unsigned(width) ? lane + delta : lane);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  unsigned lane = kiln_emulation::laneId();
  return kiln_emulation::exchange(v, lane % unsigned(width) >= delta ? lane - delta : lane);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int laneMask, int width = 32) {
  unsigned lane = kiln_emulation::laneId(), source = lane ^ unsigned(laneMask);
  return kiln_emulation::exchange(v, source / unsigned(width) == lane / unsigned(width) ? source : lane);
}

/// Atomics: blocks and their threads never run at the same time here.
template <class T>
T atomicAdd(T* address, T v) {
  T old = *address;
  *address = old + v;
  return old;
}
