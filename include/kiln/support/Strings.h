//===- kiln/support/Strings.h - Small string helpers --------------*- C++ -*-===//
//
// Joining names for messages, reports and pipelines ("RN,MN", "cpu, cuda").
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// The items with `separator` between each pair ("" for none).
inline std::string joinStrings(const std::vector<std::string>& items, std::string_view separator = ",") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

}  // namespace kiln
