//===- lib/runtime/interpreter/kernels/ImageDecoding.cpp - PNG and JPEG ---===//
//
// libpng and libjpeg report errors by longjmp. The functions that call them
// hold no object with a destructor between their setjmp and the library's
// calls, so a longjmp skips none; the pixels live in the caller's image.
//
//===----------------------------------------------------------------------===//
#include "ImageDecoding.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string_view>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

namespace kiln::runtime {
namespace {

using namespace std::string_view_literals;

bool startsWith(const uint8_t* data, size_t size, std::string_view magic, size_t at = 0) {
  return size >= at + magic.size() && std::memcmp(data + at, magic.data(), magic.size()) == 0;
}

/// The name of a format kiln recognizes but does not decode; null for others.
const char* undecodedFormat(const uint8_t* data, size_t size) {
  if (startsWith(data, size, "BM"sv)) return "BMP";
  if (startsWith(data, size, "II*\0"sv) || startsWith(data, size, "MM\0*"sv)) return "TIFF";
  if (startsWith(data, size, "RIFF"sv) && startsWith(data, size, "WEBP"sv, 8)) return "WebP";
  if (startsWith(data, size, "\0\0\0\x0cjP  "sv) || startsWith(data, size, "\xff\x4f\xff\x51"sv)) return "JPEG 2000";
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '7') return "PNM";
  return nullptr;
}

Error tooLarge(int64_t height, int64_t width) {
  return Error(ErrorCode::ExecFailure, "the image is " + std::to_string(width) + "x" + std::to_string(height) +
                                           " pixels, more than the " + std::to_string(kMaxImagePixels) +
                                           " kiln decodes");
}

//===-- PNG ---------------------------------------------------------------===//

struct PngSource {
  const uint8_t* data;
  size_t size, at;
};

void readPngBytes(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->at) png_error(png, "the stream ends inside the image");
  std::memcpy(out, src->data + src->at, n);
  src->at += n;
}

void quietPngWarning(png_structp, png_const_charp) {}
void pngErrorExit(png_structp png, png_const_charp) { png_longjmp(png, 1); }

enum class Read { Decoded, Undecodable, TooLarge };

/// Reads a PNG into `image`: 8 bits per sample, alpha dropped, a palette
/// expanded to RGB, gray kept gray.
Read readPng(const uint8_t* data, size_t size, DecodedImage& image) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, pngErrorExit, quietPngWarning);
  if (!png) return Read::Undecodable;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return Read::Undecodable;
  }
  PngSource src{data, size, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Read::Undecodable;
  }
  png_set_read_fn(png, &src, readPngBytes);
  png_read_info(png, info);
  image.width = png_get_image_width(png, info);
  image.height = png_get_image_height(png, info);
  if (image.width * image.height > kMaxImagePixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Read::TooLarge;
  }
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  image.channels = png_get_channels(png, info);
  const size_t stride = size_t(image.width) * size_t(image.channels);
  if (png_get_rowbytes(png, info) != stride) png_error(png, "unexpected row size");
  // Rows grow the pixels as they decode, so that a stream far shorter than
  // its header's size fails before the whole image is allocated.
  image.pixels.reserve(stride * size_t(image.height));
  if (passes > 1) image.pixels.resize(stride * size_t(image.height));  // each pass adds to every row
  for (int pass = 0; pass < passes; ++pass)
    for (int64_t y = 0; y < image.height; ++y) {
      if (pass == 0 && passes == 1) image.pixels.resize(size_t(y + 1) * stride);
      png_read_row(png, image.pixels.data() + size_t(y) * stride, nullptr);
    }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return Read::Decoded;
}

//===-- JPEG --------------------------------------------------------------===//

struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg's err pointer is this struct's address
  std::jmp_buf jump;
  bool truncated = false;
};

/// The most memory libjpeg may take (a progressive image holds all its
/// coefficients): past it, the stream counts as undecodable.
constexpr long kMaxJpegMemory = 1l << 30;

void jpegErrorExit(j_common_ptr info) { std::longjmp(reinterpret_cast<JpegErrors*>(info->err)->jump, 1); }

/// libjpeg's warnings (level -1) print nothing. A stream that ends early
/// decodes with gray fill; it counts as undecodable, as Pillow refuses a
/// truncated file.
void jpegMessage(j_common_ptr info, int level) {
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<JpegErrors*>(info->err)->truncated = true;
}

/// Reads a JPEG into `image`: gray for a gray source, RGB otherwise (CMYK
/// and other colour spaces are undecodable).
Read readJpeg(const uint8_t* data, size_t size, DecodedImage& image) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpegErrorExit;
  errors.manager.emit_message = jpegMessage;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    return Read::Undecodable;
  }
  jpeg_create_decompress(&info);
  info.mem->max_memory_to_use = kMaxJpegMemory;
  jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  image.width = info.image_width;
  image.height = info.image_height;
  if (image.width * image.height > kMaxImagePixels) {
    jpeg_destroy_decompress(&info);
    return Read::TooLarge;
  }
  info.out_color_space = info.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  image.width = info.output_width;
  image.height = info.output_height;
  image.channels = info.output_components;
  const size_t stride = size_t(image.width) * size_t(image.channels);
  // As in readPng, rows grow the pixels; decoding stops where the stream ends.
  image.pixels.reserve(stride * size_t(image.height));
  while (info.output_scanline < info.output_height && !errors.truncated) {
    image.pixels.resize(size_t(info.output_scanline + 1) * stride);
    JSAMPROW row = image.pixels.data() + size_t(info.output_scanline) * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  if (errors.truncated) {
    jpeg_destroy_decompress(&info);
    return Read::Undecodable;
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return Read::Decoded;
}

}  // namespace

Expected<std::optional<DecodedImage>> decodeImage(const uint8_t* data, size_t size) {
  if (const char* format = undecodedFormat(data, size))
    return Error(ErrorCode::ExecUnsupported, std::string("the stream is a ") + format +
                                             " image; kiln's ImageDecoder decodes PNG and JPEG");
  DecodedImage image;
  Read read = Read::Undecodable;
  if (startsWith(data, size, "\x89PNG\r\n\x1a\n"sv)) read = readPng(data, size, image);
  else if (startsWith(data, size, "\xff\xd8\xff"sv)) read = readJpeg(data, size, image);
  if (read == Read::TooLarge) return tooLarge(image.height, image.width);
  if (read == Read::Undecodable) return std::optional<DecodedImage>();
  return std::optional<DecodedImage>(std::move(image));
}

}  // namespace kiln::runtime
