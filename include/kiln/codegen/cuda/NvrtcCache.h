//===- kiln/codegen/cuda/NvrtcCache.h - NVRTC outputs cached by source hash -*- C++ -*-===//
//
// Compiling CUDA C with NVRTC dominates `kiln compile --target cuda` (seconds
// per model and architecture), and recompiling a model, or another model with
// the same kernels, produces the same sources. The cache keeps each cubin and
// PTX under a key made of the source, the target (sm_XX / compute_XX), the
// NVRTC version and kiln's NVRTC options: a file per entry in one directory,
// written atomically (temporary file, then rename), with a header holding a
// second hash of the key and a hash of the payload. A missing, truncated or
// foreign entry is a miss (compiled again and overwritten), never an error;
// failing to write an entry only costs the next compile its time.
//
// The default directory: $KILN_CACHE_DIR/nvrtc, else $XDG_CACHE_HOME/kiln/nvrtc,
// else $HOME/.cache/kiln/nvrtc. KILN_CACHE_DIR=off disables it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>

namespace kiln::codegen {

class NvrtcCache {
 public:
  /// A cache in `dir` (created on first store); an empty `dir` caches nothing.
  explicit NvrtcCache(std::string dir) : dir_(std::move(dir)) {}
  /// The default directory, or "" when the environment turns caching off.
  static std::string defaultDir();

  /// The entry's key for `source` compiled for `target` ("sm_80", "compute_80").
  static std::string keyOf(const std::string& source, const std::string& target);
  /// The cached bytes for `key`, or nothing (absent, damaged, or no cache).
  std::optional<std::string> load(const std::string& key) const;
  /// Stores `bytes` for `key`; false when it could not be written.
  bool store(const std::string& key, const std::string& bytes) const;

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  /// The file holding `key`'s entry.
  std::string pathOf(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace kiln::codegen
