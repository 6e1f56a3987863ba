//===- tests/unit/ScratchDir.h - Per-process scratch directories for tests ===//
//
// The CUDA tests build emulation libraries and write artifacts: each gets a
// fresh directory (dlopen hands back a library already loaded from the same
// path) under one per-process root that is removed when the process exits.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace kiln::testing {

struct ScratchRoot {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kiln-cuda-test-" + std::to_string(::getpid()));
  ~ScratchRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
inline const ScratchRoot kScratchRoot;

/// A fresh directory path (not yet created) under this process's root.
inline std::string scratchDir(const std::string& name) {
  static std::atomic<int> made{0};
  return (kScratchRoot.path / (std::to_string(made++) + "-" + name)).string();
}

}  // namespace kiln::testing
