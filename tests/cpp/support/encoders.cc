#include "support/encoders.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// clang-format off
#include <jpeglib.h>
// clang-format on
#include <libdeflate.h>
#include <openjpeg.h>

#include "codecs/cpu/lzw_encoder.h"

namespace tilewise::testing {

namespace {

struct Sink {
  std::vector<uint8_t> bytes;
  size_t pos = 0;
};

OPJ_SIZE_T sink_write(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<Sink*>(user);
  if (s->bytes.size() < s->pos + n) s->bytes.resize(s->pos + n);
  std::memcpy(s->bytes.data() + s->pos, buf, n);
  s->pos += n;
  return n;
}
OPJ_OFF_T sink_skip(OPJ_OFF_T n, void* user) {
  static_cast<Sink*>(user)->pos += static_cast<size_t>(n);
  return n;
}
OPJ_BOOL sink_seek(OPJ_OFF_T to, void* user) {
  static_cast<Sink*>(user)->pos = static_cast<size_t>(to);
  return OPJ_TRUE;
}

}  // namespace


namespace {

Encoded jpeg_encode_with(const std::vector<uint8_t>& pixels, int w, int h, int channels, bool rgb_components,
                         int h_samp, int v_samp, bool abbreviated, int quality, bool optimize) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = channels;
  c.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  c.optimize_coding = optimize ? TRUE : FALSE;
  if (channels == 3) {
    jpeg_set_colorspace(&c, rgb_components ? JCS_RGB : JCS_YCbCr);
    c.comp_info[0].h_samp_factor = rgb_components ? 1 : h_samp;
    c.comp_info[0].v_samp_factor = rgb_components ? 1 : v_samp;
  }
  c.write_JFIF_header = FALSE;
  c.write_Adobe_marker = FALSE;
  Encoded out;
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (abbreviated) {
    jpeg_mem_dest(&c, &buf, &size);
    jpeg_write_tables(&c);
    out.tables.assign(buf, buf + size);
    std::free(buf);
    buf = nullptr;
    size = 0;
    jpeg_suppress_tables(&c, TRUE);
  }
  jpeg_mem_dest(&c, &buf, &size);
  jpeg_start_compress(&c, abbreviated ? FALSE : TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) + static_cast<size_t>(c.next_scanline) * w * channels;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  out.image.assign(buf, buf + size);
  std::free(buf);
  jpeg_destroy_compress(&c);
  return out;
}

}  // namespace

// Encodes with libjpeg. rgb_components: store R,G,B components (as Aperio does) instead of YCbCr.
Encoded jpeg_encode(const std::vector<uint8_t>& pixels, int w, int h, int channels, bool rgb_components, int h_samp,
                    int v_samp, bool abbreviated) {
  return jpeg_encode_with(pixels, w, h, channels, rgb_components, h_samp, v_samp, abbreviated, 80, false);
}

std::vector<uint8_t> jpeg_encode_ycbcr(const std::vector<uint8_t>& rgb, int w, int h, int h_samp, int v_samp,
                                       int quality, bool optimize) {
  return jpeg_encode_with(rgb, w, h, 3, false, h_samp, v_samp, false, quality, optimize).image;
}

// The oracle: libjpeg's defaults on a self-contained stream, with the colour space forced as TIFF says.
std::vector<uint8_t> jpeg_reference_decode(const std::vector<uint8_t>& jpeg, bool rgb_components) {
  jpeg_decompress_struct d;
  jpeg_error_mgr err;
  d.err = jpeg_std_error(&err);
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, jpeg.data(), jpeg.size());
  jpeg_read_header(&d, TRUE);
  if (d.num_components == 3) d.jpeg_color_space = rgb_components ? JCS_RGB : JCS_YCbCr;
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  std::vector<uint8_t> out(static_cast<size_t>(d.output_width) * d.output_height * 3);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = out.data() + static_cast<size_t>(d.output_scanline) * d.output_width * 3;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return out;
}

// A lossless 3-component J2K codestream of planes[c][y * w + x]; chroma planes may be subsampled by 2.
std::vector<uint8_t> j2k_encode(const std::vector<std::vector<uint8_t>>& planes, int w, int h, int chroma_sub) {
  opj_image_cmptparm_t params[3];
  std::memset(params, 0, sizeof params);
  for (int c = 0; c < 3; ++c) {
    const int sub = c == 0 ? 1 : chroma_sub;
    params[c].dx = params[c].dy = static_cast<OPJ_UINT32>(sub);
    params[c].w = static_cast<OPJ_UINT32>((w + sub - 1) / sub);
    params[c].h = static_cast<OPJ_UINT32>((h + sub - 1) / sub);
    params[c].prec = 8;
  }
  opj_image_t* image = opj_image_create(3, params, OPJ_CLRSPC_SRGB);
  image->x1 = static_cast<OPJ_UINT32>(w);
  image->y1 = static_cast<OPJ_UINT32>(h);
  for (int c = 0; c < 3; ++c) {
    for (size_t i = 0; i < planes[c].size(); ++i) image->comps[c].data[i] = planes[c][i];
  }
  opj_cparameters_t cp;
  opj_set_default_encoder_parameters(&cp);
  cp.tcp_mct = 0;
  cp.numresolution = 4;
  opj_codec_t* codec = opj_create_compress(OPJ_CODEC_J2K);
  opj_setup_encoder(codec, &cp, image);
  Sink sink;
  opj_stream_t* stream = opj_stream_create(1 << 16, OPJ_FALSE);
  opj_stream_set_user_data(stream, &sink, nullptr);
  opj_stream_set_write_function(stream, sink_write);
  opj_stream_set_skip_function(stream, sink_skip);
  opj_stream_set_seek_function(stream, sink_seek);
  const bool ok = opj_start_compress(codec, image, stream) && opj_encode(codec, stream) && opj_end_compress(codec, stream);
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  opj_image_destroy(image);
  if (!ok) sink.bytes.clear();  // tests see an empty stream
  return sink.bytes;
}

std::vector<uint8_t> zlib_compress(const std::vector<uint8_t>& in) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  std::vector<uint8_t> out(libdeflate_zlib_compress_bound(c, in.size()));
  out.resize(libdeflate_zlib_compress(c, in.data(), in.size(), out.data(), out.size()));
  libdeflate_free_compressor(c);
  return out;
}

// A straightforward TIFF LZW encoder (MSB-first, early change), written independently of the decoder's
// table layout, to produce test streams.
std::vector<uint8_t> lzw_compress(const std::vector<uint8_t>& in) { return codecs::lzw_encode(in); }

}  // namespace tilewise::testing
