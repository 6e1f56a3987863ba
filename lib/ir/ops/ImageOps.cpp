//===- lib/ir/ops/ImageOps.cpp - Ops on encoded images --------------------===//
//
//   kiln::ImageDecoder   ONNX ImageDecoder-20: a PNG or JPEG stream (u8[n])
//                        decoded to u8[H, W, C], C = 3 (RGB, BGR) or 1 (Grayscale)
// The image's size is in the stream, so the op runs as a host step.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
namespace {

using namespace infer;

Status inferImageDecoder(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.dtype() != DType::Undefined && x.dtype() != DType::U8)
    return shapeError("encoded_stream must be u8, got " + x.str());
  if (x.hasRank() && x.rank() != 1) return shapeError("encoded_stream must be 1-D, got " + x.str());
  const std::string& format = ctx.node().getString("pixel_format");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    return Error(ErrorCode::BadAttribute, "pixel_format must be RGB, BGR or Grayscale, got '" + format + "'");
  setOut(ctx, 0, DType::U8, {kUnknownDim, kUnknownDim, format == "Grayscale" ? 1 : 3});
  return Status::ok();
}

}  // namespace

void registerImageOps(OpRegistry& r) {
  r.add(SchemaBuilder("ImageDecoder", "kiln").inputs(1, 1, {"encoded_stream"}).outputs(1, 1, {"image"})
            .attr("pixel_format", std::string("RGB")).pattern(FusionPattern::Opaque).infer(inferImageDecoder)
            .doc("A PNG or JPEG image decoded to u8[H, W, C] (ONNX ImageDecoder-20); [0, 0, C] when the "
                 "stream is not a decodable image.").build());
}

}  // namespace kiln::ir
