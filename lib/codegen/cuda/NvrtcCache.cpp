//===- lib/codegen/cuda/NvrtcCache.cpp - NVRTC outputs cached by source hash ===//
//
// See NvrtcCache.h. An entry file: "KILNNVRTC1\n", the key's second hash,
// the payload's size and hash (little-endian u64s), then the payload. Its
// name is the key: 16 hex digits of the first hash.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/cuda/NvrtcCache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/support/File.h"
#include "kiln/support/Hash.h"

namespace kiln::codegen {
namespace {

constexpr char kMagic[] = "KILNNVRTC1\n";
constexpr size_t kMagicSize = sizeof kMagic - 1;
constexpr size_t kHeaderSize = kMagicSize + 3 * sizeof(uint64_t);
constexpr uint64_t kSecondSeed = 0x6b696c6e6e767274ull;  // "kilnnvrt"

std::string hex(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[size_t(i)] = digits[v & 15];
  return s;
}

void putU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t getU64(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(in[at + size_t(i)]);
  return v;
}

}  // namespace

std::string NvrtcCache::defaultDir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  std::string root = env("KILN_CACHE_DIR");
  if (root == "off") return "";
  if (!root.empty()) return root + "/nvrtc";
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/kiln/nvrtc";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/kiln/nvrtc";
  return "";
}

std::string NvrtcCache::keyOf(const std::string& source, const std::string& target) {
  std::string key = "nvrtc " + nvrtcVersion() + " -arch=" + target;
  for (const std::string& o : nvrtcOptions()) key += " " + o;
  return key + "\n" + source;
}

std::string NvrtcCache::pathOf(const std::string& key) const { return dir_ + "/" + hex(hashString(key)); }

std::optional<std::string> NvrtcCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  Expected<std::string> entry = readFile(pathOf(key));
  if (!entry || entry->size() < kHeaderSize || entry->compare(0, kMagicSize, kMagic) != 0) return std::nullopt;
  const uint64_t keyHash = getU64(*entry, kMagicSize), size = getU64(*entry, kMagicSize + 8),
                 payloadHash = getU64(*entry, kMagicSize + 16);
  if (keyHash != hashString(key, kSecondSeed) || size != entry->size() - kHeaderSize) return std::nullopt;
  std::string payload = entry->substr(kHeaderSize);
  if (hashString(payload) != payloadHash) return std::nullopt;
  return payload;
}

bool NvrtcCache::store(const std::string& key, const std::string& bytes) const {
  if (!enabled()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return false;
  std::string entry(kMagic, kMagicSize);
  putU64(entry, hashString(key, kSecondSeed));
  putU64(entry, bytes.size());
  putU64(entry, hashString(bytes));
  entry += bytes;
  // A temporary name unique to this process and call, then an atomic rename.
  static std::atomic<uint64_t> serial{0};
  const std::string path = pathOf(key);
  const std::string temporary = path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(serial++);
  if (!writeFile(temporary, entry).isOk()) {
    std::filesystem::remove(temporary, ec);
    return false;
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) std::filesystem::remove(temporary, ec);
  return !ec;
}

}  // namespace kiln::codegen
