//===- kiln/fuse/FusionDatabase.h - Measured partitions, kept across runs -*- C++ -*-===//
//
// `kiln fuse --db F`: every partition an evaluator measures is appended to
// a JSON-lines file (one record per line: the graph's fingerprint, the
// partition's hash, the status, the latency), flushed as it is made, so an
// interrupted search keeps its data and a later search or another strategy
// replays those measurements instead of repeating them. One file holds
// records of many graphs; a graph reads only its own (the fingerprint
// hashes the fusion edges and the input types, so another model, shape or
// pipeline never matches). A corrupt line is an error naming the line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

#include "kiln/fuse/FusionEvaluator.h"

namespace kiln::fuse {

class FusionDatabase {
 public:
  /// Reads the records of `graph` from `path` (a missing file is an empty
  /// database) and opens it for appending.
  static Expected<std::unique_ptr<FusionDatabase>> open(const std::string& path, uint64_t graph);

  /// The recorded evaluations by partition hash.
  const std::map<uint64_t, Evaluation>& records() const { return records_; }
  Status append(uint64_t partition, const Evaluation& e);

 private:
  std::string path_;
  uint64_t graph_ = 0;
  std::map<uint64_t, Evaluation> records_;
  std::ofstream out_;
};

}  // namespace kiln::fuse
