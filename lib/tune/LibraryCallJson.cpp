//===- lib/tune/LibraryCallJson.cpp - A library call as JSON ----------------===//
//
// See kiln/tune/LibraryCallJson.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/LibraryCallJson.h"

#include <nlohmann/json.hpp>

namespace kiln::tune {

using runtime::LibraryCall;
using runtime::LibraryEpilogue;
using runtime::LibraryRoutine;

std::string libraryCallJson(const LibraryCall& c) {
  nlohmann::ordered_json j{{"routine", runtime::libraryName(c.routine)},
                           {"name", c.name},
                           {"dtype", dtypeName(c.dtype)},
                           {"batch", c.batch},
                           {"epilogue", runtime::libraryEpilogueName(c.epilogue)},
                           {"residual", c.residual},
                           {"allow_tf32", c.allowTf32}};
  if (c.routine == LibraryRoutine::CublasLtMatmul) {
    j.update({{"m", c.m}, {"n", c.n}, {"k", c.k}, {"trans_a", c.transA}, {"trans_b", c.transB}, {"batch_b", c.batchB},
              {"alpha", c.alpha}});
  } else {
    const runtime::ConvGeometry& g = c.conv;
    j["conv"] = {{"channels", g.channels}, {"height", g.height},     {"width", g.width},         {"out_channels", g.outChannels},
                 {"kernel_h", g.kernelH},  {"kernel_w", g.kernelW},  {"pad_h", g.padH},          {"pad_w", g.padW},
                 {"stride_h", g.strideH},  {"stride_w", g.strideW},  {"dilation_h", g.dilationH}, {"dilation_w", g.dilationW},
                 {"groups", g.groups}};
  }
  return j.dump();
}

Expected<LibraryCall> parseLibraryCallJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return makeError(ErrorCode::FileFormat, "library call: not a JSON object");
  try {
    LibraryCall c;
    const std::string routine = j.at("routine").get<std::string>();
    std::optional<LibraryRoutine> named = runtime::libraryRoutineNamed(routine);
    if (!named) return makeError(ErrorCode::FileFormat, "library call: unknown routine '", routine, "' (cuBLASLt or cuDNN)");
    c.routine = *named;
    c.name = j.value("name", "library_call");
    std::optional<DType> dtype = parseDType(j.at("dtype").get<std::string>());
    if (!dtype || (*dtype != DType::F32 && *dtype != DType::F16 && *dtype != DType::BF16))
      return makeError(ErrorCode::FileFormat, "library call ", c.name, ": type '", j.at("dtype").get<std::string>(),
                       "' is not f32, f16 or bf16");
    c.dtype = *dtype;
    c.batch = j.at("batch").get<int64_t>();
    const std::string epilogue = j.at("epilogue").get<std::string>();
    bool known = false;
    for (LibraryEpilogue e : {LibraryEpilogue::None, LibraryEpilogue::Bias, LibraryEpilogue::Relu, LibraryEpilogue::BiasRelu})
      if (epilogue == runtime::libraryEpilogueName(e)) c.epilogue = e, known = true;
    if (!known) return makeError(ErrorCode::FileFormat, "library call ", c.name, ": unknown epilogue '", epilogue, "'");
    c.residual = j.at("residual").get<bool>();
    c.allowTf32 = j.value("allow_tf32", false);
    if (c.routine == LibraryRoutine::CublasLtMatmul) {
      c.m = j.at("m").get<int64_t>();
      c.n = j.at("n").get<int64_t>();
      c.k = j.at("k").get<int64_t>();
      c.transA = j.at("trans_a").get<bool>();
      c.transB = j.at("trans_b").get<bool>();
      c.batchB = j.at("batch_b").get<bool>();
      c.alpha = j.at("alpha").get<float>();
    } else {
      const nlohmann::json& g = j.at("conv");
      runtime::ConvGeometry& d = c.conv;
      d.channels = g.at("channels").get<int64_t>();
      d.height = g.at("height").get<int64_t>();
      d.width = g.at("width").get<int64_t>();
      d.outChannels = g.at("out_channels").get<int64_t>();
      d.kernelH = g.at("kernel_h").get<int64_t>();
      d.kernelW = g.at("kernel_w").get<int64_t>();
      d.padH = g.at("pad_h").get<int64_t>();
      d.padW = g.at("pad_w").get<int64_t>();
      d.strideH = g.at("stride_h").get<int64_t>();
      d.strideW = g.at("stride_w").get<int64_t>();
      d.dilationH = g.at("dilation_h").get<int64_t>();
      d.dilationW = g.at("dilation_w").get<int64_t>();
      d.groups = g.at("groups").get<int64_t>();
    }
    if (!c.wellFormed()) return makeError(ErrorCode::FileFormat, "library call ", c.name, ": not a shape ", routine, " can run");
    return c;
  } catch (const nlohmann::json::exception& e) {
    return makeError(ErrorCode::FileFormat, "library call: missing or mistyped field: ", e.what());
  }
}

}  // namespace kiln::tune
