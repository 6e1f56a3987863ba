//===- lib/support/Npy.cpp - NumPy .npy reader and writer ------------------===//
//
// Parses the .npy header dictionary ({'descr': '<f4', 'fortran_order': False,
// 'shape': (1, 3)}) strictly enough to reject anything it cannot represent.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Npy.h"

#include <algorithm>
#include <cstring>

#include "kiln/support/File.h"
#include "kiln/support/StringPool.h"

namespace kiln {
namespace {

struct NpyDescr {
  const char* descr;
  DType dtype;
};
constexpr NpyDescr kDescrs[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"|i1", DType::I8},
    {"<i2", DType::I16}, {"<i4", DType::I32}, {"<i8", DType::I64}, {"|u1", DType::U8},
    {"<u2", DType::U16}, {"<u4", DType::U32}, {"<u8", DType::U64}, {"|b1", DType::Bool},
    {"<i1", DType::I8},  {"<u1", DType::U8},  {"<b1", DType::Bool},
};

Error npyError(const std::string& name, const std::string& what) {
  return makeError(ErrorCode::FileFormat, "'", name, "' is not a valid .npy file: ", what);
}

// Finds the value text after 'key': in the header dict.
std::optional<std::string> dictValue(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return std::nullopt;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return std::nullopt;
  size_t start = colon + 1;
  while (start < header.size() && header[start] == ' ') ++start;
  size_t end = start;
  if (start < header.size() && header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) return std::nullopt;
    return header.substr(start, end - start + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string v = header.substr(start, end - start);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

/// numpy's fixed-width string arrays: unicode ('<U<n>', UTF-32LE code points)
/// and bytes ('|S<n>'), each element NUL-padded to the width.
struct StringArrayKind {
  bool unicode;
  size_t width;  ///< code points or bytes per element
};

std::optional<StringArrayKind> stringArrayKind(const std::string& descr) {
  const bool unicode = descr.rfind("<U", 0) == 0, bytes = descr.rfind("|S", 0) == 0;
  if ((!unicode && !bytes) || descr.size() < 3 || descr.size() > 10) return std::nullopt;
  for (size_t i = 2; i < descr.size(); ++i)
    if (descr[i] < '0' || descr[i] > '9') return std::nullopt;
  return StringArrayKind{unicode, size_t(std::stoull(descr.substr(2)))};
}

/// A string array's elements as a tensor of their string-pool ids.
Expected<Tensor> parseStringArray(std::string_view data, StringArrayKind kind, const Dims& dims,
                                  const std::string& name) {
  const size_t n = size_t(numElements(dims)), stride = kind.width * (kind.unicode ? 4 : 1);
  if (stride != 0 && n > data.size() / stride) return npyError(name, "data is shorter than its shape needs");
  if (data.size() != n * stride)
    return npyError(name, "data holds " + std::to_string(data.size()) + " bytes, " + std::to_string(n) +
                              " strings of width " + std::to_string(kind.width) + " need " + std::to_string(n * stride));
  std::vector<std::string> strings(n);
  for (size_t i = 0; i < n; ++i) {
    std::string_view element = data.substr(i * stride, stride);
    if (!kind.unicode) {
      strings[i] = std::string(element.substr(0, element.find('\0')));
      continue;
    }
    std::u32string points;
    for (size_t k = 0; k < kind.width; ++k) {
      char32_t c = 0;
      for (int b = 3; b >= 0; --b) c = (c << 8) | uint8_t(element[4 * k + size_t(b)]);
      if (c == 0) break;
      if (c > 0x10ffff) return npyError(name, "a unicode element holds code point " + std::to_string(uint32_t(c)));
      points.push_back(c);
    }
    strings[i] = encodeUtf8(points);
  }
  auto t = stringTensor(dims, strings);
  if (!t) return npyError(name, t.error().message());
  return t;
}

/// The header and data of an array: `descr` and `dims`, then `data`.
std::string npyFile(const std::string& descr, const Dims& dims, std::string_view data) {
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    shape += std::to_string(dims[i]);
    shape += (dims.size() == 1 || i + 1 < dims.size()) ? "," : "";
    if (i + 1 < dims.size()) shape += " ";
  }
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  header += std::string(pad, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char((header.size() >> 8) & 0xff);
  out += header;
  out.append(data);
  return out;
}

}  // namespace

Expected<Tensor> parseNpy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return npyError(name, "missing \\x93NUMPY magic");
  int major = uint8_t(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return npyError(name, "truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i) headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return npyError(name, "unsupported format version " + std::to_string(major));
  }
  if (headerLen > bytes.size() - headerStart) return npyError(name, "truncated header");
  std::string header = bytes.substr(headerStart, headerLen);
  auto descr = dictValue(header, "descr");
  auto fortran = dictValue(header, "fortran_order");
  auto shape = dictValue(header, "shape");
  if (!descr || !fortran || !shape) return npyError(name, "header lacks descr/fortran_order/shape");
  if (*fortran != "False") return npyError(name, "Fortran-ordered arrays are not supported");
  std::string d = *descr;
  if (d.size() < 2 || (d.front() != '\'' && d.front() != '"')) return npyError(name, "bad descr");
  d = d.substr(1, d.size() - 2);
  std::optional<DType> dtype;
  for (const auto& e : kDescrs)
    if (d == e.descr) dtype = e.dtype;
  std::optional<StringArrayKind> strings = stringArrayKind(d);
  if (strings) dtype = DType::I64;  // a string tensor: ids into the string pool
  if (!dtype) return npyError(name, "unsupported dtype '" + d + "'");
  if (shape->size() < 2 || shape->front() != '(' || shape->back() != ')')
    return npyError(name, "bad shape '" + *shape + "' (a tuple is expected)");
  Dims dims;
  std::string s = shape->substr(1, shape->size() - 2);
  size_t pos = 0;
  while (pos < s.size()) {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == ',')) ++pos;
    if (pos >= s.size()) break;
    size_t end = pos;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == pos || end - pos > 18) return npyError(name, "bad shape " + *shape);
    dims.push_back(std::stoll(s.substr(pos, end - pos)));
    pos = end;
  }
  auto n = checkedNumElements(dims);
  if (!n) return npyError(name, "shape too large");
  size_t dataStart = headerStart + headerLen;
  if (strings) return parseStringArray(bytes.substr(dataStart), *strings, dims, name);
  size_t expected = size_t(*n) * dtypeSize(*dtype);
  if (bytes.size() - dataStart != expected)
    return npyError(name, "data holds " + std::to_string(bytes.size() - dataStart) +
                              " bytes, shape " + *shape + " needs " + std::to_string(expected));
  Tensor t = Tensor::zeros(*dtype, dims);
  if (expected) std::memcpy(t.mutableRawData(), bytes.data() + dataStart, expected);
  if (*dtype == DType::Bool) {  // normalise to 0/1 so no bool holds another byte value
    auto* p = static_cast<uint8_t*>(t.mutableRawData());
    for (int64_t i = 0; i < *n; ++i) p[i] = p[i] ? 1 : 0;
  }
  return t;
}

Expected<Tensor> readNpy(const std::string& path) {
  KILN_ASSIGN(std::string bytes, readFile(path));
  return parseNpy(bytes, path);
}

std::string serializeNpy(const Tensor& input) {
  Tensor t = input.dtype() == DType::BF16 ? input.castTo(DType::F32) : input;
  const char* descr = nullptr;
  for (const auto& e : kDescrs)
    if (e.dtype == t.dtype()) {
      descr = e.descr;
      break;
    }
  KILN_CHECK(descr, "no .npy descr for ", dtypeName(t.dtype()));
  return npyFile(descr, t.dims(), std::string_view(static_cast<const char*>(t.rawData()), t.byteSize()));
}

Expected<std::string> serializeStringNpy(const Tensor& ids) {
  KILN_ASSIGN(std::vector<std::string> strings, tensorStrings(ids));
  std::vector<std::u32string> points;
  size_t width = 1;
  for (const std::string& s : strings) {
    std::optional<std::u32string> p = decodeUtf8(s);
    if (!p) return Error(ErrorCode::FileFormat, "a string is not valid UTF-8, so it cannot be written as a unicode .npy array");
    width = std::max(width, p->size());
    points.push_back(std::move(*p));
  }
  std::string data(4 * width * points.size(), '\0');
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t k = 0; k < points[i].size(); ++k)
      for (int b = 0; b < 4; ++b) data[4 * (i * width + k) + size_t(b)] = char((points[i][k] >> (8 * b)) & 0xff);
  return npyFile("<U" + std::to_string(width), ids.dims(), data);
}

Status writeStringNpy(const std::string& path, const Tensor& ids) {
  KILN_ASSIGN(std::string bytes, serializeStringNpy(ids));
  return writeFile(path, bytes);
}

Status writeNpy(const std::string& path, const Tensor& tensor) {
  return writeFile(path, serializeNpy(tensor));
}

}  // namespace kiln
