// JPEG-LS (ISO 14495-1) through CharLS, the reference-grade implementation Debian ships: DICOM slides
// may store frames in it (transfer syntaxes 1.2.840.10008.1.2.4.80/81), which OpenSlide cannot read.
#include <charls/charls.h>

#include <cstring>
#include <memory>
#include <vector>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

namespace {
Status charls_error(charls::jpegls_errc e) { return corrupt(std::string("jpeg-ls: ") + charls_get_error_message(e)); }
}  // namespace

bool jpegls_ends_with_eoi(std::span<const uint8_t> in) {
  const size_t n = in.size();
  auto eoi_at = [&](size_t end) { return end >= 2 && end <= n && in[end - 2] == 0xFF && in[end - 1] == 0xD9; };
  return eoi_at(n) || (n >= 3 && in[n - 1] == 0x00 && eoi_at(n - 1));
}

Result<size_t> jpegls_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t samples, int32_t bits) {
  if (bits != 8 && !(bits == 16 && samples == 1)) {
    return unsupported("jpeg-ls: " + std::to_string(samples) + " samples of " + std::to_string(bits) + " bits");
  }
  std::vector<uint8_t> terminated;
  if (!jpegls_ends_with_eoi(in)) {  // see lossless_decoders.h: without its EOI CharLS may take seconds
    terminated.reserve(in.size() + 2);
    terminated.assign(in.begin(), in.end());
    terminated.push_back(0xFF);
    terminated.push_back(0xD9);
    in = terminated;
  }
  std::unique_ptr<charls_jpegls_decoder, void (*)(const charls_jpegls_decoder*)> d(charls_jpegls_decoder_create(),
                                                                                   &charls_jpegls_decoder_destroy);
  if (!d) return out_of_memory("jpeg-ls: cannot allocate a decoder");
  if (auto e = charls_jpegls_decoder_set_source_buffer(d.get(), in.data(), in.size());
      e != charls::jpegls_errc::success) {
    return charls_error(e);
  }
  if (auto e = charls_jpegls_decoder_read_header(d.get()); e != charls::jpegls_errc::success) return charls_error(e);
  charls_frame_info info{};
  if (auto e = charls_jpegls_decoder_get_frame_info(d.get(), &info); e != charls::jpegls_errc::success)
    return charls_error(e);
  const bool depth_fits = bits == 8 ? info.bits_per_sample == 8 : info.bits_per_sample > 8 && info.bits_per_sample <= 16;
  if (!depth_fits || info.component_count != samples || static_cast<int64_t>(info.width) != width ||
      static_cast<int64_t>(info.height) > height) {
    return corrupt("jpeg-ls: the stream is " + std::to_string(info.width) + "x" + std::to_string(info.height) + ", " +
                   std::to_string(info.component_count) + " components of " + std::to_string(info.bits_per_sample) +
                   " bits; the tile is " + std::to_string(width) + "x" + std::to_string(height) + ", " +
                   std::to_string(samples) + " " + std::to_string(bits) + "-bit samples");
  }
  charls::interleave_mode mode{};
  if (auto e = charls_jpegls_decoder_get_interleave_mode(d.get(), &mode); e != charls::jpegls_errc::success)
    return charls_error(e);
  const size_t bytes = size_t{info.width} * info.height * static_cast<size_t>(samples) * static_cast<size_t>(bits / 8);
  if (bytes > out.size()) return corrupt("jpeg-ls: the stream holds more pixels than the tile");
  if (mode != charls::interleave_mode::none || samples == 1) {
    if (auto e = charls_jpegls_decoder_decode_to_buffer(d.get(), out.data(), bytes, 0);
        e != charls::jpegls_errc::success) {
      return charls_error(e);
    }
    return bytes;
  }
  // Planar streams (one scan per component) decode plane after plane; interleave them into samples.
  std::vector<uint8_t> planes(bytes);
  if (auto e = charls_jpegls_decoder_decode_to_buffer(d.get(), planes.data(), bytes, 0);
      e != charls::jpegls_errc::success) {
    return charls_error(e);
  }
  const size_t plane = size_t{info.width} * info.height;
  for (size_t i = 0; i < plane; ++i) {
    for (int32_t c = 0; c < samples; ++c)
      out[i * static_cast<size_t>(samples) + static_cast<size_t>(c)] = planes[c * plane + i];
  }
  return bytes;
}

}  // namespace tilewise::codecs
