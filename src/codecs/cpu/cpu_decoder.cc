#include "codecs/cpu/cpu_decoder.h"

#include <cstring>

#include "codecs/cpu/jpeg2000_decoder.h"
#include "codecs/jpeg/jpeg_decoder.h"
#include "codecs/cpu/lossless_decoders.h"
#include "codecs/cpu/pixel_convert.h"
#include "util/bytes.h"

namespace tilewise::codecs {

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kJpeg: return "jpeg";
    case Compression::kDeflate: return "deflate";
    case Compression::kLzw: return "lzw";
    case Compression::kZstd: return "zstd";
    case Compression::kJpeg2000: return "jpeg2000";
    case Compression::kJpegLs: return "jpeg-ls";
    case Compression::kPng: return "png";
    case Compression::kBmp: return "bmp";
    case Compression::kJpegXr: return "jpegxr";
  }
  return "unknown";
}

CpuDecoder::CpuDecoder()
    : jpeg_(std::make_unique<JpegDecoder>()),
      jpeg2000_(std::make_unique<Jpeg2000Decoder>()),
      deflate_(std::make_unique<DeflateDecoder>()),
      zstd_(std::make_unique<ZstdDecoder>()) {}
CpuDecoder::~CpuDecoder() = default;

Status CpuDecoder::supports(const TileDesc& desc) {
  if (desc.width <= 0 || desc.height <= 0) return invalid_argument("empty tile");
  if (desc.scale_denom != 1 && (desc.compression != Compression::kJpeg ||
                                (desc.scale_denom != 2 && desc.scale_denom != 4 && desc.scale_denom != 8))) {
    return unsupported("decoding at 1/" + std::to_string(desc.scale_denom) + " scale (only JPEG at 1/2, 1/4, 1/8)");
  }
  if (desc.planes != 1 && (desc.planes != 3 || desc.compression != Compression::kJpeg)) {
    return unsupported(std::string(compression_name(desc.compression)) + ": " + std::to_string(desc.planes) +
                       " planes (only JPEG in 3)");
  }
  if (desc.samples_per_pixel < 1 || desc.samples_per_pixel > kMaxSamples) {
    return unsupported(std::to_string(desc.samples_per_pixel) + " samples per pixel are not supported");
  }
  if (desc.compression == Compression::kJpeg || desc.compression == Compression::kJpeg2000) {
    // JPEG 2000 grey samples of up to 16 bits read as they are stored (medical and fluorescence images)
    const bool grey16 = desc.compression == Compression::kJpeg2000 && desc.samples_per_pixel == 1 &&
                        desc.bits_per_sample == 16 && desc.sample_format == SampleFormat::kUnsigned;
    if (desc.bits_per_sample != 8 && !grey16) {
      return unsupported(std::to_string(desc.bits_per_sample) + "-bit " + compression_name(desc.compression) +
                         " is not supported");
    }
    return Status();
  }
  if (desc.bits_per_sample != 8 && desc.bits_per_sample != 16 && desc.bits_per_sample != 32) {
    return unsupported(std::to_string(desc.bits_per_sample) + "-bit samples are not supported");
  }
  if (desc.sample_format == SampleFormat::kFloat && desc.bits_per_sample != 32) {
    return unsupported(std::to_string(desc.bits_per_sample) + "-bit floating-point samples are not supported");
  }
  if (desc.bits_per_sample == 32 && desc.predictor != 1) {
    return unsupported("predictor " + std::to_string(desc.predictor) + " on 32-bit samples is not supported");
  }
  if (desc.color == ColorSpace::kYCbCr) return unsupported("uncompressed YCbCr samples are not supported");
  if (desc.predictor != 1 && desc.predictor != 2) {
    return unsupported("predictor " + std::to_string(desc.predictor) + " is not supported");
  }
  return Status();
}

Status CpuDecoder::renders_rgb(const TileDesc& desc) {
  TW_RETURN_IF_ERROR(supports(desc));
  if (desc.samples_per_pixel > 4) {
    return unsupported(std::to_string(desc.samples_per_pixel) + " samples per pixel have no RGB rendering");
  }
  const bool lossy = desc.compression == Compression::kJpeg || desc.compression == Compression::kJpeg2000;
  if (!lossy && desc.samples_per_pixel >= 3 && desc.color != ColorSpace::kRgb && desc.color != ColorSpace::kBgr) {
    return unsupported("multi-sample non-RGB images have no RGB rendering");
  }
  if (desc.bits_per_sample == 32 || desc.sample_format != SampleFormat::kUnsigned) {
    return unsupported(std::to_string(desc.bits_per_sample) + "-bit " +
                       (desc.sample_format == SampleFormat::kFloat    ? "floating-point"
                        : desc.sample_format == SampleFormat::kSigned ? "signed"
                                                                      : "unsigned") +
                       " samples have no RGB rendering (read them as they are stored)");
  }
  return Status();
}

void CpuDecoder::decode_batch(std::span<const DecodeRequest> requests, std::span<Status> statuses) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const DecodeRequest& r = requests[i];
    const bool whole = r.x == 0 && r.y == 0 && r.out.width == r.desc->width;
    statuses[i] = whole ? decode(r.data, *r.desc, r.out) : decode_window(r.data, *r.desc, r.out, r.x, r.y);
  }
}

namespace {

// The view takes the RGB rendering, or the tile's own samples (decoder.h).
bool native_output(const TileDesc& desc, const ImageView& out) {
  return !out.is_rgb8() && out.channels == desc.samples_per_pixel && out.sample_bytes * 8 == desc.bits_per_sample;
}

bool output_matches(const TileDesc& desc, const ImageView& out) {
  return out.device.is_cpu() && (out.is_rgb8() || native_output(desc, out)) && (out.is_rgb8() || desc.planes == 1);
}

}  // namespace

Status CpuDecoder::decode(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out) {
  TW_RETURN_IF_ERROR(out.is_rgb8() ? renders_rgb(desc) : supports(desc));
  if (out.width != desc.width || out.height > desc.height || out.height <= 0 || !output_matches(desc, out)) {
    return internal_error("decoder output view does not match the tile");
  }
  if (desc.planes > 1) return decode_planes(data, desc, out, 0, 0, false);
  if (native_output(desc, out)) return decode_native(data, desc, out, 0, 0);
  if (desc.compression == Compression::kJpeg) return jpeg_->decode(data, desc, out);
  if (desc.compression == Compression::kJpeg2000) return jpeg2000_->decode_window(data, desc, out, 0, 0);
  return decode_lossless(data, desc, out);
}

Result<std::pair<int32_t, int32_t>> CpuDecoder::jpeg_dimensions(std::span<const uint8_t> data) {
  return jpeg_->dimensions(data);
}

uint8_t* CpuDecoder::copy_to_scratch(const uint8_t* data, size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  std::memcpy(scratch_.data(), data, bytes);
  return scratch_.data();
}

Status CpuDecoder::decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out,
                                 int32_t x, int32_t y) {
  TW_RETURN_IF_ERROR(out.is_rgb8() ? renders_rgb(desc) : supports(desc));
  if (x < 0 || y < 0 || out.width <= 0 || out.height <= 0 || x + out.width > desc.width ||
      y + out.height > desc.height || !output_matches(desc, out)) {
    return internal_error("decode window lies outside the tile");
  }
  if (desc.planes > 1) return decode_planes(data, desc, out, x, y, true);
  if (native_output(desc, out)) return decode_native(data, desc, out, x, y);
  if (desc.compression == Compression::kJpeg) return jpeg_->decode_window(data, desc, out, x, y, true);
  if (desc.compression == Compression::kJpeg2000) return jpeg2000_->decode_window(data, desc, out, x, y);
  const int32_t rows = y + out.height;
  window_rgb_.resize(static_cast<size_t>(desc.width) * rows * 3);
  const ImageView whole{window_rgb_.data(), int64_t{desc.width} * 3, desc.width, rows, 3, {}};
  TW_RETURN_IF_ERROR(decode_lossless(data, desc, whole));
  for (int32_t r = 0; r < out.height; ++r) std::memcpy(out.row(r), whole.pixel(x, y + r), out.row_bytes());
  return Status();
}

Status CpuDecoder::decode_planes(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                                 int32_t y, bool window) {
  TileDesc plane = desc;
  plane.planes = 1;
  plane.jpeg_tables = {};
  plane_grey_.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height));
  const ImageView grey{plane_grey_.data(), int64_t{out.width}, out.width, out.height, 1, {}};
  size_t at = 0;
  const std::string name = std::string(compression_name(desc.compression)) + " planes: the ";
  for (int c = 0; c < 3; ++c) {
    const char* channel = c == 0 ? "red" : c == 1 ? "green" : "blue";
    if (data.size() - at < 4) return corrupt(name + channel + " channel is missing");
    const uint32_t length = internal::load_le32(data.data() + at);
    at += 4;
    if (length > data.size() - at) return corrupt(name + channel + " channel is cut short");
    const auto bytes = data.subspan(at, length);
    at += length;
    Status s = window ? jpeg_->decode_window(bytes, plane, grey, x, y, true) : jpeg_->decode(bytes, plane, grey);
    if (!s.ok()) return s.with_context(std::string(channel) + " channel");
    for (int32_t r = 0; r < out.height; ++r) {
      const uint8_t* src = grey.row(r);
      uint8_t* dst = out.row(r);
      for (int32_t i = 0; i < out.width; ++i) dst[3 * i + c] = src[i];
    }
  }
  return Status();
}

Result<const uint8_t*> CpuDecoder::lossless_samples(std::span<const uint8_t> data, const TileDesc& desc,
                                                     int32_t rows) {
  const int bytes_per_sample = desc.bits_per_sample / 8;
  const int64_t row_bytes = int64_t{desc.width} * desc.samples_per_pixel * bytes_per_sample;
  const size_t needed = static_cast<size_t>(row_bytes) * rows;        // rows the caller wants
  const size_t whole = static_cast<size_t>(row_bytes) * desc.height;  // rows of a complete chunk
  const char* name = compression_name(desc.compression);
  if (desc.compression == Compression::kNone && data.size() > whole) {
    // More bytes than a whole chunk's pixels: the samples are not what the directory says (SamplesPerPixel,
    // BitsPerSample) or the byte count is wrong; reading them would misplace every pixel.
    return corrupt(std::string("none: tile holds ") + std::to_string(data.size()) + " bytes, more than the " +
                   std::to_string(whole) + " of its " + std::to_string(desc.width) + "x" +
                   std::to_string(desc.height) + " pixels of " + std::to_string(desc.samples_per_pixel) + " samples");
  }
  if (desc.compression == Compression::kNone && desc.predictor == 1) {
    if (data.size() < needed) {
      return corrupt(std::string("none: tile holds ") + std::to_string(data.size()) + " bytes, " +
                     std::to_string(needed) + " needed");
    }
    return data.data();
  }
  // A chunk decompresses to at most `whole` bytes; the last strip of an image may hold fewer rows, so
  // only the rows the caller needs must be present.
  if (scratch_.size() < whole) scratch_.resize(whole);
  size_t produced = 0;
  switch (desc.compression) {
    case Compression::kNone:
      if (data.size() < needed) return corrupt("none: tile is shorter than its pixels");
      std::memcpy(scratch_.data(), data.data(), needed);
      produced = needed;
      break;
    case Compression::kDeflate: {
      TW_ASSIGN_OR_RETURN(produced, deflate_->decode(data, {scratch_.data(), whole}));
      break;
    }
    case Compression::kZstd: {
      TW_ASSIGN_OR_RETURN(produced, zstd_->decode(data, {scratch_.data(), whole}));
      break;
    }
    case Compression::kLzw: {
      // A stream decoded in order: only the rows asked for (a window in a tile's top part stops early);
      // byte planes need the whole chunk.
      TW_ASSIGN_OR_RETURN(produced, lzw_decode(data, {scratch_.data(), desc.split_bytes ? whole : needed}));
      break;
    }
    case Compression::kJpegLs: {
      TW_ASSIGN_OR_RETURN(
          produced, jpegls_decode(data, {scratch_.data(), whole}, desc.width, desc.height, desc.samples_per_pixel,
                                  desc.bits_per_sample));
      break;
    }
    case Compression::kPng: {
      TW_ASSIGN_OR_RETURN(produced, png_decode(data, {scratch_.data(), whole}, desc.width, desc.height));
      break;
    }
    case Compression::kBmp: {
      TW_ASSIGN_OR_RETURN(produced, bmp_decode(data, {scratch_.data(), whole}, desc.width, desc.height));
      break;
    }
    case Compression::kJpegXr: {
      TW_ASSIGN_OR_RETURN(produced, jpegxr_decode(data, {scratch_.data(), whole}, desc.width, desc.height,
                                                  desc.samples_per_pixel * bytes_per_sample));
      break;
    }
    default:
      return internal_error("unexpected compression");
  }
  if (produced < needed) {
    return corrupt(std::string(name) + ": data decompresses to " + std::to_string(produced) + " bytes, " +
                   std::to_string(needed) + " needed");
  }
  if (desc.split_bytes && bytes_per_sample == 2) join_byte_planes(scratch_.data(), whole, planes_);
  if (desc.predictor == 2 && bytes_per_sample == 1) {
    undo_horizontal_predictor(scratch_.data(), row_bytes, rows, desc.samples_per_pixel);
  }
  return scratch_.data();
}

Status CpuDecoder::decode_lossless(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out) {
  if (desc.bits_per_sample == 32) {
    return unsupported(std::string(compression_name(desc.compression)) +
                       ": 32-bit samples have no 8-bit RGB rendering (read them as they are stored)");
  }
  TW_ASSIGN_OR_RETURN(const uint8_t* samples, lossless_samples(data, desc, out.height));
  const int bytes_per_sample = desc.bits_per_sample / 8;
  const int64_t row_bytes = int64_t{desc.width} * desc.samples_per_pixel * bytes_per_sample;
  const size_t needed = static_cast<size_t>(row_bytes) * out.height;
  if (bytes_per_sample == 2) {
    // 16-bit samples become 8-bit (the high byte) in place, after the predictor; rows keep their stride.
    narrow_16_to_8(scratch_.data() == samples ? scratch_.data() : copy_to_scratch(samples, needed), row_bytes,
                   out.height, desc);
    samples = scratch_.data();
  }
  samples_to_rgb(samples, row_bytes, desc, out);
  return Status();
}

Status CpuDecoder::decode_native(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                                 int32_t y) {
  const int32_t rows = y + out.height;
  if (desc.compression == Compression::kJpeg || desc.compression == Compression::kJpeg2000) {
    // Grey samples of these codecs: JPEG 2000 writes them itself; JPEG's are its RGB rendering's first
    // channel (a 3-sample tile is RGB itself and never comes here).
    if (desc.samples_per_pixel != 1) {
      return unsupported(std::string(compression_name(desc.compression)) + ": " +
                         std::to_string(desc.samples_per_pixel) + " samples cannot be read as they are stored");
    }
    if (desc.compression == Compression::kJpeg2000) return jpeg2000_->decode_window(data, desc, out, x, y);
    window_rgb_.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height) * 3);
    const ImageView rgb{window_rgb_.data(), int64_t{out.width} * 3, out.width, out.height, 3, {}};
    TW_RETURN_IF_ERROR(desc.compression == Compression::kJpeg ? jpeg_->decode_window(data, desc, rgb, x, y, true)
                                                              : jpeg2000_->decode_window(data, desc, rgb, x, y));
    for (int32_t r = 0; r < out.height; ++r) {
      const uint8_t* src = rgb.row(r);
      uint8_t* dst = out.row(r);
      for (int32_t i = 0; i < out.width; ++i) dst[i] = src[3 * i];
    }
    return Status();
  }
  TW_ASSIGN_OR_RETURN(const uint8_t* samples, lossless_samples(data, desc, rows));
  const int bytes_per_sample = desc.bits_per_sample / 8;
  const int spp = desc.samples_per_pixel;
  const int64_t row_bytes = int64_t{desc.width} * spp * bytes_per_sample;
  if (bytes_per_sample > 1 && (desc.big_endian || desc.predictor == 2)) {
    uint8_t* own = samples == scratch_.data() ? scratch_.data()
                                              : copy_to_scratch(samples, static_cast<size_t>(row_bytes) * rows);
    to_host_samples(own, row_bytes, rows, desc);
    samples = own;
  }
  const size_t pixel = static_cast<size_t>(spp) * static_cast<size_t>(bytes_per_sample);
  for (int32_t r = 0; r < out.height; ++r) {
    const uint8_t* src = samples + (y + r) * row_bytes + static_cast<int64_t>(x) * static_cast<int64_t>(pixel);
    uint8_t* dst = out.row(r);
    if (desc.color == ColorSpace::kBgr && spp >= 3) {
      for (int32_t i = 0; i < out.width; ++i, src += pixel, dst += pixel) {
        std::memcpy(dst, src, pixel);
        std::memcpy(dst, src + 2 * bytes_per_sample, static_cast<size_t>(bytes_per_sample));
        std::memcpy(dst + 2 * bytes_per_sample, src, static_cast<size_t>(bytes_per_sample));
      }
    } else {
      std::memcpy(dst, src, static_cast<size_t>(out.width) * pixel);
    }
  }
  return Status();
}

Status CpuDecoder::decode_sample(std::span<const uint8_t> data, const TileDesc& desc, int32_t sample, uint8_t* out,
                                 int64_t out_stride, int32_t rows) {
  if (desc.bits_per_sample != 8 || sample < 0 || sample >= desc.samples_per_pixel || rows <= 0 ||
      rows > desc.height) {
    return unsupported(std::string(compression_name(desc.compression)) + ": sample " + std::to_string(sample) +
                       " of " + std::to_string(desc.samples_per_pixel) + " " +
                       std::to_string(desc.bits_per_sample) + "-bit samples cannot be read alone");
  }
  switch (desc.compression) {
    case Compression::kNone: case Compression::kDeflate: case Compression::kZstd: case Compression::kLzw: break;
    default:
      return unsupported(std::string(compression_name(desc.compression)) + ": a single sample cannot be read");
  }
  TW_ASSIGN_OR_RETURN(const uint8_t* samples, lossless_samples(data, desc, rows));
  const int64_t row_bytes = int64_t{desc.width} * desc.samples_per_pixel;
  for (int32_t y = 0; y < rows; ++y) {
    const uint8_t* src = samples + y * row_bytes + sample;
    uint8_t* dst = out + y * out_stride;
    for (int32_t x = 0; x < desc.width; ++x) dst[x] = src[int64_t{x} * desc.samples_per_pixel];
  }
  return Status();
}

}  // namespace tilewise::codecs
