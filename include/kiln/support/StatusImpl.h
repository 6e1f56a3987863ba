//===- kiln/support/StatusImpl.h - Template bodies for Status.h ---*- C++ -*-===//
//
// Out-of-line template definitions for Status.h; include Status.h, not this file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>

namespace kiln {
namespace detail {
inline std::string concat() { return {}; }
template <class T, class... Rest>
std::string concat(T&& first, Rest&&... rest) {
  std::ostringstream os;
  os << std::forward<T>(first);
  ((os << std::forward<Rest>(rest)), ...);
  return os.str();
}
}  // namespace detail

template <class... Args>
Error makeError(ErrorCode code, Args&&... args) {
  return Error(code, detail::concat(std::forward<Args>(args)...));
}
}  // namespace kiln
