//===- tests/unit/EmulatedDriverCounters.h - What the emulated driver counted -===//
//
// Reads the counters tests/emulation/EmulatedDriver.cpp exports (live
// objects, CUDA graph launches) from the copy of the emulated driver the
// runtime has loaded (KILN_CUDA_DRIVER = KILN_EMULATED_DRIVER), so a unit
// test can check that a run released everything it took, or launched its
// work as graph replays.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <catch2/catch.hpp>

#include <dlfcn.h>

namespace kiln::testing {

/// Calls one of the emulated driver's counters (the runtime has loaded the driver).
template <class R>
R driverCounter(const char* symbol) {
  void* driver = dlopen(KILN_EMULATED_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(driver);
  auto counter = reinterpret_cast<R (*)()>(dlsym(driver, symbol));
  REQUIRE(counter);
  R n = counter();
  dlclose(driver);
  return n;
}

/// Objects the emulated driver still holds (allocations, modules, streams, graphs, pinned blocks, contexts).
inline int liveDriverObjects() { return driverCounter<int>("kiln_emulated_live_objects"); }

/// CUDA graph launches the emulated driver has run so far.
inline unsigned long long graphLaunches() { return driverCounter<unsigned long long>("kiln_emulated_graph_launches"); }

}  // namespace kiln::testing
