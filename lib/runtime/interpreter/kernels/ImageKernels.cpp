//===- lib/runtime/interpreter/kernels/ImageKernels.cpp - ImageDecoder ----===//
//
// kiln::ImageDecoder (ONNX ImageDecoder-20): decodes the stream
// (ImageDecoding.h) and converts its pixels to the asked format as Pillow's
// convert() does; a stream that is no decodable image gives [0, 0, C], as
// the ONNX spec says.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "ImageDecoding.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Pillow's RGB to L: ITU-R 601-2 luma in 16-bit fixed point, rounded.
uint8_t luma(const uint8_t* rgb) { return uint8_t((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16); }

/// One pixel of `from` channels (1 gray, 3 RGB) as `format` (RGB, BGR or Grayscale).
void convertPixel(const uint8_t* in, int from, const std::string& format, uint8_t* out) {
  if (format == "Grayscale") {
    out[0] = from == 1 ? in[0] : luma(in);
  } else if (from == 1) {
    out[0] = out[1] = out[2] = in[0];
  } else {
    const bool bgr = format == "BGR";
    out[0] = in[bgr ? 2 : 0];
    out[1] = in[1];
    out[2] = in[bgr ? 0 : 2];
  }
}

Status kImageDecoder(KernelContext& ctx) {
  const Tensor& stream = ctx.input(0);
  const std::string& format = ctx.node().getString("pixel_format");
  const int channels = format == "Grayscale" ? 1 : 3;
  KILN_ASSIGN(std::optional<DecodedImage> image, decodeImage(stream.data<uint8_t>(), size_t(stream.numElements())));
  if (!image) {
    ctx.allocate(0, DType::U8, {0, 0, channels});
    return Status::ok();
  }
  Tensor& out = ctx.allocate(0, DType::U8, {image->height, image->width, channels});
  uint8_t* o = out.mutableData<uint8_t>();
  const size_t pixels = size_t(image->height * image->width);
  for (size_t i = 0; i < pixels; ++i)
    convertPixel(image->pixels.data() + i * size_t(image->channels), image->channels, format, o + i * size_t(channels));
  return Status::ok();
}

}  // namespace

void registerImageKernels(KernelRegistry& r) { r.add("kiln::ImageDecoder", kImageDecoder); }

}  // namespace kiln::runtime
