//===- lib/support/Status.cpp - Error formatting and check failures -------===//
//
// Formats errors as "error KE<code> (<name>): node '<n>' (<op>, opset <v>): <msg>"
// (control characters in names, op types and messages escaped: they can come
// from a model file) and implements the abort path of KILN_CHECK.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Status.h"

#include <cstdio>
#include <cstdlib>

#include "kiln/support/Strings.h"

namespace kiln {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::OnnxMalformed: return "malformed-model";
    case ErrorCode::OnnxUnsupportedOpset: return "unsupported-opset";
    case ErrorCode::OnnxUnsupportedOp: return "unsupported-op";
    case ErrorCode::OnnxInvalidGraph: return "invalid-graph";
    case ErrorCode::OnnxUnknownDType: return "unknown-dtype";
    case ErrorCode::OnnxBadTensorData: return "bad-tensor-data";
    case ErrorCode::OnnxExternalData: return "external-data";
    case ErrorCode::BadAttribute: return "bad-attribute";
    case ErrorCode::ShapeMismatch: return "shape-mismatch";
    case ErrorCode::ShapeBinding: return "shape-binding";
    case ErrorCode::UnsupportedType: return "unsupported-type";
    case ErrorCode::IrParse: return "ir-parse";
    case ErrorCode::IrVerify: return "ir-verify";
    case ErrorCode::PatchFormat: return "patch-format";
    case ErrorCode::ExecInput: return "bad-input";
    case ErrorCode::ExecFailure: return "execution-failed";
    case ErrorCode::ExecUnsupported: return "unsupported-kernel";
    case ErrorCode::IoError: return "io-error";
    case ErrorCode::FileFormat: return "file-format";
    case ErrorCode::InvalidArgument: return "invalid-argument";
    case ErrorCode::CodegenUnsupported: return "codegen-unsupported";
    case ErrorCode::FusionPlanFormat: return "fusion-plan-format";
    case ErrorCode::ArtifactCorrupt: return "artifact-corrupt";
    case ErrorCode::ArtifactVersion: return "artifact-version";
    case ErrorCode::DeviceUnavailable: return "device-unavailable";
    case ErrorCode::DeviceFailure: return "device-failure";
    case ErrorCode::DeviceOutOfMemory: return "device-out-of-memory";
    case ErrorCode::Internal: return "internal";
  }
  return "unknown";
}

Error& Error::atNode(const std::string& nodeName, const std::string& opType,
                     std::optional<int64_t> opset) {
  if (located_) return *this;
  located_ = true;
  nodeName_ = nodeName;
  opType_ = opType;
  opset_ = opset;
  return *this;
}

Error& Error::withContext(const std::string& context) {
  message_ = context + ": " + message_;
  return *this;
}

std::string Error::str() const {
  std::string out = "error KE" + std::to_string(static_cast<int>(code_)) + " (" +
                    errorCodeName(code_) + "): ";
  // Names, op types and other text in a message can come from a model file.
  if (located_) {
    out += "node '" + printable(nodeName_) + "'";
    if (!opType_.empty()) {
      out += " (" + printable(opType_);
      if (opset_) out += ", opset " + std::to_string(*opset_);
      out += ")";
    }
    out += ": ";
  }
  return out + printable(message_, true);
}

void checkFailed(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "kiln internal error: check '%s' failed at %s:%d%s%s\n", expr, file,
               line, msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kiln
