//===- kiln/support/File.h - Reading, writing and mapping files ----*- C++ -*-===//
//
// Whole-file reads and writes with kiln errors, and read-only memory mapping
// used for external weight data (the mapping lives as long as any tensor on it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln {

Expected<std::string> readFile(const std::string& path);
Status writeFile(const std::string& path, const std::string& contents);
/// Reads a record-per-line file (kiln's JSON-lines databases): `take` gets
/// each non-blank line and its 1-based number; a line it rejects is listed
/// in `problems` as "path:N: why (skipped)". A missing file has no lines.
/// Returns the number of lines read (blank ones included).
Expected<size_t> readRecordLines(const std::string& path, const std::function<Status(const std::string&, size_t)>& take,
                                 std::vector<std::string>& problems);
/// Appends `line` and a newline with one write() on an O_APPEND descriptor
/// (creating the file), so lines of concurrent writers never interleave.
Status appendLine(const std::string& path, const std::string& line);

/// A read-only mapping of a whole file.
class MappedFile {
 public:
  static Expected<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  /// Read-only buffer for [offset, offset+length); the range must lie inside the file.
  static Expected<std::shared_ptr<Buffer>> slice(const std::shared_ptr<MappedFile>& file,
                                                 size_t offset, size_t length);

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

/// Replaces characters outside [A-Za-z0-9_.-] with '_' (file names from tensor names).
std::string sanitizeFileName(const std::string& name);

}  // namespace kiln
