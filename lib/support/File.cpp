//===- lib/support/File.cpp - File reads, writes and mmap ------------------===//
//
// POSIX implementations of whole-file I/O and read-only mapping.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/File.h"

#include <filesystem>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln {

Expected<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(ErrorCode::IoError, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return makeError(ErrorCode::IoError, "cannot read '", path, "'");
  return ss.str();
}

Status writeFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeError(ErrorCode::IoError, "cannot create '", path, "': ", std::strerror(errno));
  out.write(contents.data(), std::streamsize(contents.size()));
  out.close();
  if (!out) return makeError(ErrorCode::IoError, "cannot write '", path, "'");
  return Status::ok();
}

Expected<size_t> readRecordLines(const std::string& path, const std::function<Status(const std::string&, size_t)>& take,
                                 std::vector<std::string>& problems) {
  if (!std::filesystem::exists(path)) return size_t(0);
  KILN_ASSIGN(std::string text, readFile(path));
  std::istringstream in(text);
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (Status s = take(line, number); !s.isOk())
      problems.push_back(path + ":" + std::to_string(number) + ": " + s.error().message() + " (skipped)");
  }
  return number;
}

Status appendLine(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return makeError(ErrorCode::IoError, "cannot open '", path, "' to append: ", std::strerror(errno));
  std::string text = line + "\n";
  ssize_t written = ::write(fd, text.data(), text.size());
  int writeErrno = errno;
  ::close(fd);
  if (written != ssize_t(text.size()))
    return makeError(ErrorCode::IoError, "cannot append to '", path, "': ",
                     written < 0 ? std::strerror(writeErrno) : "short write");
  return Status::ok();
}

Expected<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return makeError(ErrorCode::IoError, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(ErrorCode::IoError, "'", path, "' is not a regular file");
  }
  size_t size = size_t(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    // Populated in one call: every user reads the whole file (weights, an artifact's
    // checksum), and a fault per few pages costs more than the read (each an exit on a VM).
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return makeError(ErrorCode::IoError, "cannot map '", path, "': ", std::strerror(errno));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

Expected<std::shared_ptr<Buffer>> MappedFile::slice(const std::shared_ptr<MappedFile>& file,
                                                    size_t offset, size_t length) {
  if (offset > file->size_ || length > file->size_ - offset)
    return makeError(ErrorCode::IoError, "range [", offset, ", ", offset + length,
                     ") lies outside the file (", file->size_, " bytes)");
  static const uint8_t kEmpty = 0;
  const uint8_t* p = file->data_ ? file->data_ + offset : &kEmpty;
  return Buffer::view(file, p, length);
}

std::string sanitizeFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace kiln
