//===- kiln/support/Status.h - Errors, Status and Expected<T> -----*- C++ -*-===//
//
// Every user-facing failure in kiln is an `Error`: an error code (printed as
// KE<number>), a message, and where known the node, op and opset it concerns.
// Public APIs return `Status` or `Expected<T>`; no exception crosses them.
// Internal invariants use KILN_CHECK, which aborts with a message: a failed check
// is a kiln bug, never the user's fault.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

/// Stable error codes. Numbers never change meaning once released; the ranges are
/// 1xxx model import, 2xxx IR, 3xxx execution, 4xxx files and usage, 5xxx code
/// generation and artifacts, 9xxx internal.
enum class ErrorCode : uint16_t {
  OnnxMalformed = 1001,      ///< file is not a parseable ONNX ModelProto (or truncated)
  OnnxUnsupportedOpset = 1002,
  OnnxUnsupportedOp = 1003,
  OnnxInvalidGraph = 1004,   ///< undefined or duplicate value, cycle, missing graph
  OnnxUnknownDType = 1005,
  OnnxBadTensorData = 1006,  ///< tensor payload does not match its declared type/shape
  OnnxExternalData = 1007,   ///< external-data file missing, unreadable or out of range
  BadAttribute = 1008,       ///< missing required attribute, wrong kind or value
  ShapeMismatch = 1009,      ///< shapes or types of a node's inputs are inconsistent
  ShapeBinding = 1010,       ///< --shape given for an unknown input or incompatible dims
  UnsupportedType = 1011,    ///< a value type kiln cannot represent (string, map, sparse)
  IrParse = 2001,
  IrVerify = 2002,
  PatchFormat = 2003,        ///< a kiln evolve patch that does not parse or does not fit the graph
  ExecInput = 3001,          ///< missing, extra or mistyped input at run time
  ExecFailure = 3002,        ///< a kernel rejected its operands (e.g. index out of range)
  ExecUnsupported = 3003,    ///< no interpreter kernel for the op or dtype
  IoError = 4001,
  FileFormat = 4002,         ///< .npy / .pb tensor file could not be parsed
  InvalidArgument = 4003,
  CodegenUnsupported = 5001, ///< no schedule template or target support for an op
  FusionPlanFormat = 5002,   ///< a fusion plan file could not be parsed or does not fit the graph
  ArtifactCorrupt = 5003,    ///< a .kiln artifact is truncated or fails its checksum
  ArtifactVersion = 5004,    ///< a .kiln artifact from another format version or target
  DeviceUnavailable = 5005,  ///< no CUDA driver or no CUDA device on this machine
  DeviceFailure = 5006,      ///< a CUDA driver call failed (launch failure, ...)
  DeviceOutOfMemory = 5007,  ///< the model's device memory does not fit on the GPU
  Internal = 9001,
};

/// Short symbolic name of a code, e.g. "unsupported-op".
const char* errorCodeName(ErrorCode code);

/// A user-facing error with optional location information.
class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& nodeName() const { return nodeName_; }
  const std::string& opType() const { return opType_; }
  std::optional<int64_t> opset() const { return opset_; }

  /// Attaches the node the error concerns; keeps an earlier, more precise location.
  Error& atNode(const std::string& nodeName, const std::string& opType,
                std::optional<int64_t> opset = std::nullopt);
  /// Records the opset of the node's op when not known yet.
  Error& withOpset(int64_t opset) {
    if (!opset_) opset_ = opset;
    return *this;
  }
  /// Prepends context ("while importing initializer 'w': ...").
  Error& withContext(const std::string& context);

  /// "error KE1003 (unsupported-op): node 'conv1' (Conv, opset 13): <message>"
  std::string str() const;

 private:
  ErrorCode code_;
  std::string message_;
  std::string nodeName_;
  std::string opType_;
  std::optional<int64_t> opset_;
  bool located_ = false;
};

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status ok() { return Status(); }

  bool isOk() const { return !error_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Error& error() const& { return *error_; }
  Error& error() & { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

/// A value of type T or an Error.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}          // NOLINT
  Expected(Error error) : storage_(std::move(error)) {}      // NOLINT
  Expected(Status status) : storage_(std::move(status).error()) {}  // NOLINT: must be an error

  bool isOk() const { return storage_.index() == 0; }
  explicit operator bool() const { return isOk(); }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(storage_); }
  Error&& error() && { return std::get<1>(std::move(storage_)); }
  Status status() const { return isOk() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> storage_;
};

/// Builds an Error whose message is the concatenation of the arguments.
template <class... Args>
Error makeError(ErrorCode code, Args&&... args);

[[noreturn]] void checkFailed(const char* expr, const char* file, int line, const std::string& msg);

namespace detail {
std::string concat();
template <class T, class... Rest>
std::string concat(T&& first, Rest&&... rest);
}  // namespace detail

}  // namespace kiln

#include "kiln/support/StatusImpl.h"

/// Internal invariant: a failure is a kiln bug and aborts with the message.
#define KILN_CHECK(cond, ...)                                                             \
  do {                                                                                    \
    if (!(cond)) ::kiln::checkFailed(#cond, __FILE__, __LINE__, ::kiln::detail::concat(__VA_ARGS__)); \
  } while (0)

/// Propagates an error Status/Expected from the enclosing function.
#define KILN_TRY(expr)                                 \
  do {                                                 \
    auto kilnTryStatus_ = (expr);                      \
    if (!kilnTryStatus_.isOk()) return std::move(kilnTryStatus_).error(); \
  } while (0)

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)
/// `KILN_ASSIGN(auto x, someExpected());` binds the value or returns the error.
#define KILN_ASSIGN(decl, expr) KILN_ASSIGN_IMPL_(KILN_CONCAT_(kilnExpected_, __LINE__), decl, expr)
#define KILN_ASSIGN_IMPL_(tmp, decl, expr)          \
  auto tmp = (expr);                                \
  if (!tmp.isOk()) return std::move(tmp).error();   \
  decl = std::move(tmp).value()
