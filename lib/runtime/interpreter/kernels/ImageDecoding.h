//===- lib/runtime/interpreter/kernels/ImageDecoding.h - PNG and JPEG -*- C++ -*-===//
//
// Decodes encoded images to 8-bit pixels, channel-last, the way Pillow (the
// ONNX reference implementation's decoder) reads them: no gamma or colour
// management, 16-bit samples cut to their high byte, palettes expanded,
// alpha dropped, JPEG through libjpeg's default (islow DCT, fancy upsampling).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/Status.h"

namespace kiln::runtime {

struct DecodedImage {
  int64_t height = 0, width = 0;
  int channels = 0;  ///< 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;
};

/// Images larger than this many pixels are refused rather than decoded.
inline constexpr int64_t kMaxImagePixels = int64_t(1) << 28;

/// The image in `data` as gray (a gray source) or RGB pixels; nullopt when
/// the stream is not a PNG or JPEG image libpng or libjpeg can decode. An
/// error for what kiln cannot decode: another format it recognizes (BMP,
/// TIFF, WebP, JPEG 2000, PNM), or an image over kMaxImagePixels.
Expected<std::optional<DecodedImage>> decodeImage(const uint8_t* data, size_t size);

}  // namespace kiln::runtime
