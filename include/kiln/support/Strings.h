//===- kiln/support/Strings.h - Small string helpers --------------*- C++ -*-===//
//
// Joining names for messages, reports and pipelines ("RN,MN", "cpu, cuda"),
// making text from a model safe to print on a terminal or to put in SVG,
// and durations as progress lines show them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdio>
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

/// `text` with XML's special characters as entities (SVG text and attributes).
inline std::string xmlEscaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

/// Seconds as "mm:ss" (an ETA or elapsed time on a progress line).
inline std::string clockText(double seconds) {
  const long s = long(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%02ld:%02ld", s / 60, s % 60);
  return text;
}

}  // namespace kiln
