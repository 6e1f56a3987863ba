//===- kiln/support/Tensor.h - Dense host tensors over shared buffers -*- C++ -*-===//
//
// A Tensor is a dtype, static dims and a reference to a Buffer. Buffers are shared,
// never copied implicitly: a weight imported from a protobuf string or a memory-
// mapped external-data file stays where it is, and reshaping a tensor shares it.
// Read-only buffers (weights) refuse mutable access; fresh buffers are writable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/DType.h"
#include "kiln/support/Status.h"

namespace kiln {

using Dims = std::vector<int64_t>;

/// Product of dims, or nullopt if a dim is negative or the product exceeds 2^62.
std::optional<int64_t> checkedNumElements(const Dims& dims);
/// Product of dims; dims must be valid (checked).
int64_t numElements(const Dims& dims);
/// "1x3x224x224"; "scalar" for rank 0.
std::string dimsToString(const Dims& dims);

/// A contiguous byte range kept alive by an owner (heap block, protobuf string, mmap).
class Buffer {
 public:
  /// Zero-filled, 64-byte aligned, writable.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  /// As allocate, but the `bytes` bytes are left unset: for a caller that writes every one
  /// (a weight repack or fold writes 100 MB; zeroing them first is a second pass over them).
  static std::shared_ptr<Buffer> allocateForWrite(size_t bytes);
  /// A 64-byte aligned, writable copy of `bytes` bytes at `data` (not zero-filled first).
  static std::shared_ptr<Buffer> copyOf(const void* data, size_t bytes);
  /// Read-only view of memory owned by `owner`.
  static std::shared_ptr<Buffer> view(std::shared_ptr<const void> owner, const void* data,
                                      size_t bytes);
  /// Takes over a string's storage (e.g. TensorProto.raw_data) without copying.
  static std::shared_ptr<Buffer> adoptString(std::string&& bytes);

  const uint8_t* data() const { return data_; }
  uint8_t* mutableData();
  size_t size() const { return size_; }
  bool isMutable() const { return mutable_; }
  /// 64-bit hash of the contents, computed once.
  uint64_t contentHash() const;

 private:
  Buffer(std::shared_ptr<const void> owner, const uint8_t* data, size_t size, bool isMutable)
      : owner_(std::move(owner)), data_(data), size_(size), mutable_(isMutable) {}
  std::shared_ptr<const void> owner_;
  const uint8_t* data_;
  size_t size_;
  bool mutable_;
  mutable std::optional<uint64_t> hash_;
};

class Tensor {
 public:
  Tensor() = default;
  /// `buffer` must hold exactly numElements(dims) * dtypeSize(dtype) bytes (checked).
  Tensor(DType dtype, Dims dims, std::shared_ptr<Buffer> buffer);

  /// Zero-filled writable tensor.
  static Tensor zeros(DType dtype, Dims dims);
  /// Writable tensor whose elements are unset: the caller writes every one.
  static Tensor forWrite(DType dtype, Dims dims);
  template <class T>
  static Tensor fromVector(Dims dims, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) { return fromVector<T>({}, std::vector<T>{value}); }

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return int64_t(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[size_t(i)]; }
  int64_t numElements() const { return numElements_; }
  size_t byteSize() const { return size_t(numElements_) * dtypeSize(dtype_); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  const void* rawData() const { return buffer_ ? buffer_->data() : nullptr; }
  void* mutableRawData() { return buffer_ ? buffer_->mutableData() : nullptr; }
  template <class T>
  const T* data() const {
    KILN_CHECK(dtypeOf<T>() == dtype_, "tensor is ", dtypeName(dtype_), ", accessed as ",
               dtypeName(dtypeOf<T>()));
    return static_cast<const T*>(rawData());
  }
  template <class T>
  T* mutableData() {
    KILN_CHECK(dtypeOf<T>() == dtype_, "tensor is ", dtypeName(dtype_), ", accessed as ",
               dtypeName(dtypeOf<T>()));
    return static_cast<T*>(mutableRawData());
  }

  /// Same data, other dims (element count must match; checked).
  Tensor reshaped(Dims dims) const;
  /// Deep, writable copy.
  Tensor clone() const;
  /// Element-wise conversion (ONNX Cast semantics: float->int truncates, saturating;
  /// NaN -> 0; anything -> bool is "!= 0").
  Tensor castTo(DType dtype) const;

  /// Values of an integer or bool tensor (or a float tensor, truncated) as int64.
  std::vector<int64_t> toInt64s() const;
  /// Values as double.
  std::vector<double> toDoubles() const;
  /// Single element as double; numElements() must be 1 (checked).
  double scalarAsDouble() const;

  uint64_t contentHash() const;
  /// Same dtype, dims and bytes.
  bool bitwiseEqual(const Tensor& other) const;
  /// "f32[2,3]"
  std::string typeString() const;

 private:
  DType dtype_ = DType::Undefined;
  Dims dims_;
  int64_t numElements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

/// Calls f<U>() with U an unsigned integer type of the element size (1, 2,
/// 4, else 8 bytes): moves elements of any dtype without a memcpy each.
template <class F>
void byElementSize(size_t size, F&& f) {
  switch (size) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    default: f.template operator()<uint64_t>(); break;
  }
}

/// Converts one value with ONNX Cast semantics (no undefined behaviour on overflow).
template <class To, class From>
To convertValue(From v);

}  // namespace kiln

#include "kiln/support/TensorImpl.h"
