//===- kiln/support/Strings.h - Small string helpers --------------*- C++ -*-===//
//
// Joining names for messages, reports and pipelines ("RN,MN", "cpu, cuda"),
// and making text from a model safe to print on a terminal.
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

/// `text` with each control character (C0, DEL) written as \n, \t, \r or \xHH, so
/// that names and op types from a model cannot move the cursor, recolour or
/// clear a terminal; `keepNewlines` leaves line breaks (multi-line messages).
inline std::string printable(std::string_view text, bool keepNewlines = false) {
  std::string out;
  out.reserve(text.size());
  static const char* hex = "0123456789abcdef";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) out += ch;
    else if (c == '\n') out += keepNewlines ? "\n" : "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
  }
  return out;
}

}  // namespace kiln
