//===- lib/support/Tensor.cpp - Buffers, tensors and element conversion ----===//
//
// Buffer ownership (heap, adopted strings, views), tensor construction and
// the few whole-tensor utilities every layer needs (cast, clone, value lists).
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kiln/support/Hash.h"
#include "kiln/support/ProcessInfo.h"

namespace kiln {

std::optional<int64_t> checkedNumElements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > (int64_t(1) << 62) / d) return std::nullopt;
    n *= d;
  }
  return n;
}

int64_t numElements(const Dims& dims) {
  auto n = checkedNumElements(dims);
  KILN_CHECK(n.has_value(), "invalid dims ", dimsToString(dims));
  return *n;
}

std::string dimsToString(const Dims& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

namespace {

/// 64-byte aligned storage for `bytes`, rounded up to whole cache lines (at
/// least one): the pointer, its owner and the rounded size; contents undefined.
struct AlignedStorage {
  uint8_t* data;
  std::shared_ptr<const void> owner;
  size_t capacity;
};

AlignedStorage alignedStorage(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (rounded < kWeightSizedBytes) {
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::shared_ptr<const void> owner(p, [](const void* q) { std::free(const_cast<void*>(q)); });
    return {static_cast<uint8_t*>(p), std::move(owner), rounded};
  }
  // Weight-sized buffers: a plain block 64 bytes longer, aligned inside. glibc's
  // aligned_alloc needs more than a freed block of the same request holds, so a
  // weight packed or folded after its source was freed took fresh memory beside
  // the heap (BERT-base: a third of the dense panels, partly in 4 KiB pages, the
  // model 10% slower); a plain block of the same size reuses it. Fresh pages are
  // mapped in one call (each 4 KiB fault is an exit to the hypervisor on a VM),
  // in huge pages where whole ones fit.
  void* block = std::malloc(rounded + 64);
  if (!block) throw std::bad_alloc();
  void* p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block) + 63) / 64 * 64);
  mapPagesForWrite(p, rounded);
  std::shared_ptr<const void> owner(p, [block](const void*) { std::free(block); });
  return {static_cast<uint8_t*>(p), std::move(owner), rounded};
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  auto buffer = allocateForWrite(bytes);
  std::memset(buffer->mutableData(), 0, bytes);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::allocateForWrite(size_t bytes) {
  AlignedStorage s = alignedStorage(bytes);
  std::memset(s.data + bytes, 0, s.capacity - bytes);  // the rest of the last line, zero as allocate leaves it
  return std::shared_ptr<Buffer>(new Buffer(std::move(s.owner), s.data, bytes, true));
}

std::shared_ptr<Buffer> Buffer::copyOf(const void* data, size_t bytes) {
  auto buffer = allocateForWrite(bytes);
  if (bytes) std::memcpy(buffer->mutableData(), data, bytes);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::view(std::shared_ptr<const void> owner, const void* data,
                                     size_t bytes) {
  return std::shared_ptr<Buffer>(
      new Buffer(std::move(owner), static_cast<const uint8_t*>(data), bytes, false));
}

std::shared_ptr<Buffer> Buffer::adoptString(std::string&& bytes) {
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  const auto* data = reinterpret_cast<const uint8_t*>(owner->data());
  size_t size = owner->size();
  return std::shared_ptr<Buffer>(new Buffer(std::move(owner), data, size, false));
}

uint8_t* Buffer::mutableData() {
  KILN_CHECK(mutable_, "write access to a read-only buffer");
  hash_.reset();
  return const_cast<uint8_t*>(data_);
}

uint64_t Buffer::contentHash() const {
  if (!hash_) hash_ = hashBytes(data_, size_);
  return *hash_;
}

Tensor::Tensor(DType dtype, Dims dims, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), dims_(std::move(dims)), buffer_(std::move(buffer)) {
  auto n = checkedNumElements(dims_);
  KILN_CHECK(n.has_value(), "invalid tensor dims ", dimsToString(dims_));
  numElements_ = *n;
  KILN_CHECK(buffer_ && buffer_->size() == byteSize(), "buffer of ",
             buffer_ ? buffer_->size() : 0, " bytes for ", typeString());
}

Tensor Tensor::zeros(DType dtype, Dims dims) {
  Tensor t = forWrite(dtype, std::move(dims));
  std::memset(t.buffer_->mutableData(), 0, t.byteSize());
  return t;
}

Tensor Tensor::forWrite(DType dtype, Dims dims) {
  auto n = checkedNumElements(dims);
  KILN_CHECK(n.has_value(), "invalid tensor dims ", dimsToString(dims));
  auto buffer = Buffer::allocateForWrite(size_t(*n) * dtypeSize(dtype));
  return Tensor(dtype, std::move(dims), std::move(buffer));
}

Tensor Tensor::reshaped(Dims dims) const {
  Tensor t;
  t.dtype_ = dtype_;
  auto n = checkedNumElements(dims);
  KILN_CHECK(n && *n == numElements_, "reshape of ", typeString(), " to ", dimsToString(dims));
  t.dims_ = std::move(dims);
  t.numElements_ = numElements_;
  t.buffer_ = buffer_;
  return t;
}

Tensor Tensor::clone() const {
  return Tensor(dtype_, dims_, Buffer::copyOf(rawData(), byteSize()));
}

Tensor Tensor::castTo(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out = forWrite(dtype, dims_);
  dispatchDType(dtype_, [&]<class From>() {
    dispatchDType(dtype, [&]<class To>() {
      const From* in = data<From>();
      To* o = out.mutableData<To>();
      for (int64_t i = 0; i < numElements_; ++i) o[i] = convertValue<To, From>(in[i]);
    });
  });
  return out;
}

std::vector<int64_t> Tensor::toInt64s() const {
  std::vector<int64_t> v(static_cast<size_t>(numElements_));
  dispatchDType(dtype_, [&]<class T>() {
    const T* in = data<T>();
    for (int64_t i = 0; i < numElements_; ++i) v[size_t(i)] = convertValue<int64_t, T>(in[i]);
  });
  return v;
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> v(static_cast<size_t>(numElements_));
  dispatchDType(dtype_, [&]<class T>() {
    const T* in = data<T>();
    for (int64_t i = 0; i < numElements_; ++i) v[size_t(i)] = convertValue<double, T>(in[i]);
  });
  return v;
}

double Tensor::scalarAsDouble() const {
  KILN_CHECK(numElements_ == 1, "scalarAsDouble on ", typeString());
  return toDoubles()[0];
}

uint64_t Tensor::contentHash() const {
  uint64_t h = buffer_ ? buffer_->contentHash() : 0;
  h = hashCombine(h, uint64_t(dtype_));
  for (int64_t d : dims_) h = hashCombine(h, uint64_t(d));
  return h;
}

bool Tensor::bitwiseEqual(const Tensor& other) const {
  if (dtype_ != other.dtype_ || dims_ != other.dims_) return false;
  if (rawData() == other.rawData()) return true;
  return std::memcmp(rawData(), other.rawData(), byteSize()) == 0;
}

std::string Tensor::typeString() const {
  std::string s = std::string(dtypeName(dtype_)) + "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace kiln
