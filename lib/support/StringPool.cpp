//===- lib/support/StringPool.cpp - The process-wide string pool ----------===//

#include "kiln/support/StringPool.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "kiln/support/Hash.h"

namespace kiln {
namespace {

/// Separates string ids from the other uses of hashBytes.
constexpr uint64_t kStringIdSeed = 0x5374724964ull;

struct Pool {
  std::shared_mutex mutex;
  /// Node-based: a string's address never changes once inserted.
  std::unordered_map<int64_t, std::string> strings;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: views stay valid through static destruction
  return *p;
}

Error collision(int64_t id) {
  return Error(ErrorCode::ExecFailure, "two different strings have the same string id " + std::to_string(id) +
                                           " (a hash collision); kiln cannot hold both");
}

int64_t idOf(std::string_view s) {
  if (s.empty()) return 0;
  int64_t id = int64_t(hashString(s, kStringIdSeed));
  return id == 0 ? 1 : id;
}

}  // namespace

Expected<int64_t> internString(std::string_view s) {
  const int64_t id = idOf(s);
  if (id == 0) return id;
  Pool& p = pool();
  {
    std::shared_lock lock(p.mutex);
    auto it = p.strings.find(id);
    if (it != p.strings.end()) return it->second == s ? Expected<int64_t>(id) : collision(id);
  }
  std::unique_lock lock(p.mutex);
  auto [it, inserted] = p.strings.try_emplace(id, s);
  if (!inserted && it->second != s) return collision(id);
  return id;
}

std::optional<std::string_view> pooledString(int64_t id) {
  if (id == 0) return std::string_view();
  Pool& p = pool();
  std::shared_lock lock(p.mutex);
  auto it = p.strings.find(id);
  if (it == p.strings.end()) return std::nullopt;
  return std::string_view(it->second);
}

const char* pooledCString(int64_t id) {
  std::optional<std::string_view> s = pooledString(id);
  if (!s) return nullptr;
  return s->empty() ? "" : s->data();  // a pooled std::string's bytes, which end in NUL
}

/// Code points of a UTF-8 string; nullopt when it is not valid UTF-8.
std::optional<std::u32string> decodeUtf8(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto b = uint8_t(s[i]);
    const int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
    if (extra < 0 || s.size() - i <= size_t(extra)) return std::nullopt;  // a sequence cut short
    char32_t c = extra == 0 ? b : b & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto cont = uint8_t(s[i + size_t(k)]);
      if ((cont >> 6) != 2) return std::nullopt;
      c = (c << 6) | (cont & 0x3f);
    }
    out.push_back(c);
    i += size_t(extra) + 1;
  }
  return out;
}

std::string encodeUtf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xc0 | (c >> 6));
      out += char(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += char(0xe0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    } else {
      out += char(0xf0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3f));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    }
  }
  return out;
}

Expected<Tensor> stringTensor(const Dims& dims, const std::vector<std::string>& strings) {
  Tensor t = Tensor::forWrite(DType::I64, dims);
  if (size_t(t.numElements()) != strings.size())
    return Error(ErrorCode::ShapeMismatch, std::to_string(strings.size()) + " strings do not fill a tensor of dims " +
                                               dimsToString(dims));
  int64_t* out = t.mutableData<int64_t>();
  for (size_t i = 0; i < strings.size(); ++i) {
    KILN_ASSIGN(out[i], internString(strings[i]));
  }
  return t;
}

Expected<std::vector<std::string>> tensorStrings(const Tensor& ids) {
  if (ids.dtype() != DType::I64)
    return Error(ErrorCode::ExecFailure, std::string("a string tensor is held as i64 ids, not ") + dtypeName(ids.dtype()));
  std::vector<std::string> out;
  out.reserve(size_t(ids.numElements()));
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numElements(); ++i) {
    std::optional<std::string_view> s = pooledString(p[i]);
    if (!s)
      return Error(ErrorCode::ExecFailure, "element " + std::to_string(i) + " of a string tensor is id " +
                                               std::to_string(p[i]) + ", which names no known string");
    out.emplace_back(*s);
  }
  return out;
}

}  // namespace kiln
