//===- lib/runtime/core/SharedLibrary.h - Vendor libraries, dlopened -*- C++ -*-===//
//
// The runtime links none of NVIDIA's libraries (it must load CPU artifacts
// where they are absent): the driver, cuBLASLt and cuDNN are dlopened when
// the first artifact needs them. openSharedLibrary() loads the file an
// environment variable names (the tests point it at the CPU emulations),
// else the first of the default names that loads; need() resolves one entry
// point into a typed function pointer and remembers the first that is
// missing, so a loader reports one clear error after resolving them all.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace kiln::runtime {

struct SharedLibrary {
  void* handle = nullptr;       ///< null when nothing loaded
  std::string path;             ///< what was loaded (or last tried)
  const char* missing = nullptr;  ///< the first symbol need() did not find

  template <class F>
  void need(const char* symbol, F& fn) {
    fn = reinterpret_cast<F>(dlsym(handle, symbol));
    if (!fn && !missing) missing = symbol;
  }
};

/// getenv(envVar) if set (and only it), else the first of `names` that dlopens.
inline SharedLibrary openSharedLibrary(const char* envVar, std::initializer_list<const char*> names) {
  SharedLibrary lib;
  const char* override = std::getenv(envVar);
  if (override && *override) {
    lib.path = override;
    lib.handle = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    return lib;
  }
  for (const char* name : names) {
    lib.path = name;
    if ((lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib.handle && names.size()) lib.path = *names.begin();
  return lib;
}

}  // namespace kiln::runtime
