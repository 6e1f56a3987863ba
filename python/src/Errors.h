//===- python/src/Errors.h - kiln::Error as kiln.Error subclasses ---------===//
//
// The extension raises kiln's errors as the Python classes of
// kiln/errors.py: one subclass per family of KE codes, carrying the code, its
// name, the node and op type it concerns, and the message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <pybind11/pybind11.h>

#include "kiln/support/Status.h"

namespace kiln::python {

/// Carries a kiln::Error through C++ frames to the exception translator.
struct KilnException {
  Error error;
};

/// Throws `e` as its kiln.Error subclass.
[[noreturn]] void raise(const Error& e);

/// The value of `x`, or its error raised.
template <class T>
T take(Expected<T>&& x) {
  if (!x) raise(x.error());
  return std::move(*x);
}

/// Raises the error of a failed status.
inline void take(Status&& s) {
  if (!s.isOk()) raise(s.error());
}

/// Registers the translator that turns KilnException into kiln.errors classes.
void registerErrors(pybind11::module_& m);

}  // namespace kiln::python
