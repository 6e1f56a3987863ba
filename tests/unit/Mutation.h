//===- tests/unit/Mutation.h - Seeded mutants for parser fuzz loops -*- C++ -*-===//
//
// A text's mutant for the unit tests' fuzz loops: one to three edits, each
// replacing a byte, erasing a run, inserting a character of `alphabet` (the
// format's own punctuation), duplicating a run or cutting the rest off,
// drawn from kiln::SplitMix64 so that every trial is reproducible.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

#include "kiln/support/Random.h"

namespace kiln::testing {

inline std::string mutated(std::string text, SplitMix64& rng, std::string_view alphabet) {
  for (size_t k = 0, edits = 1 + rng.below(3); k < edits && !text.empty(); ++k) {
    const size_t at = rng.below(text.size());
    switch (rng.below(5)) {
      case 0: text[at] = char(rng.next()); break;
      case 1: text.erase(at, 1 + rng.below(16)); break;
      case 2: text.insert(at, 1, alphabet[rng.below(alphabet.size())]); break;
      case 3: text.insert(at, text.substr(rng.below(text.size()), 1 + rng.below(20))); break;
      default: text.resize(at); break;
    }
  }
  return text;
}

}  // namespace kiln::testing
