#include "codecs/cpu/jpeg2000_decoder.h"
#include "codecs/cpu/openjpeg_messages.h"
#include "util/bytes.h"

#include <openjpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tilewise::codecs {

namespace {

// An OpenJPEG input stream over a memory buffer.
struct MemoryStream {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

OPJ_SIZE_T stream_read(void* buffer, OPJ_SIZE_T bytes, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (s->pos >= s->size) return static_cast<OPJ_SIZE_T>(-1);
  const size_t n = std::min<size_t>(bytes, s->size - s->pos);
  std::memcpy(buffer, s->data + s->pos, n);
  s->pos += n;
  return n;
}
OPJ_OFF_T stream_skip(OPJ_OFF_T bytes, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (bytes < 0) {
    const size_t back = std::min<size_t>(static_cast<size_t>(-bytes), s->pos);
    s->pos -= back;
    return -static_cast<OPJ_OFF_T>(back);
  }
  const size_t n = std::min<size_t>(static_cast<size_t>(bytes), s->size - s->pos);
  s->pos += n;
  return static_cast<OPJ_OFF_T>(n);
}
OPJ_BOOL stream_seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (to < 0 || static_cast<size_t>(to) > s->size) return OPJ_FALSE;
  s->pos = static_cast<size_t>(to);
  return OPJ_TRUE;
}

// RAII owners of OpenJPEG objects.
struct Codec {
  opj_codec_t* p = opj_create_decompress(OPJ_CODEC_J2K);
  ~Codec() { if (p) opj_destroy_codec(p); }
};
struct Stream {
  opj_stream_t* p;
  explicit Stream(MemoryStream* m) : p(opj_stream_create(1 << 16, OPJ_TRUE)) {
    if (!p) return;
    opj_stream_set_user_data(p, m, nullptr);
    opj_stream_set_user_data_length(p, m->size);
    opj_stream_set_read_function(p, stream_read);
    opj_stream_set_skip_function(p, stream_skip);
    opj_stream_set_seek_function(p, stream_seek);
  }
  ~Stream() { if (p) opj_stream_destroy(p); }
};
struct Image {
  opj_image_t* p = nullptr;
  ~Image() { if (p) opj_image_destroy(p); }
};

uint8_t clamp8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

constexpr auto be32 = internal::load_be32;

// Checks the codestream's SIZ marker (ISO 15444-1 A.5.1) before OpenJPEG sees it: OpenJPEG allocates its
// tile and component structures while reading the header, so a few bytes claiming a huge image or tile grid
// cost hundreds of MB (found by fuzz_codecs: a 280 MB calloc inside opj_read_header). A tile's codestream
// must describe at most the tile, in a small grid, with 1, 3 or 4 components.
Status check_siz(std::span<const uint8_t> data, const TileDesc& desc) {
  // SOC (FF4F) then SIZ (FF51): Lsiz, Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz, YTOsiz, Csiz.
  if (data.size() < 42 || data[0] != 0xFF || data[1] != 0x4F || data[2] != 0xFF || data[3] != 0x51) {
    return corrupt("jpeg2000: the codestream does not start with SOC and SIZ markers");
  }
  const uint8_t* siz = data.data() + 4;
  const uint32_t x = be32(siz + 4), y = be32(siz + 8), x0 = be32(siz + 12), y0 = be32(siz + 16);
  const uint32_t tw = be32(siz + 20), th = be32(siz + 24), tx0 = be32(siz + 28), ty0 = be32(siz + 32);
  const uint32_t components = uint32_t{siz[36]} << 8 | siz[37];
  if (x <= x0 || y <= y0 || tw == 0 || th == 0 || tx0 > x0 || ty0 > y0) {
    return corrupt("jpeg2000: invalid image or tile geometry in the SIZ marker");
  }
  const uint64_t w = x - x0, h = y - y0;
  if (w > static_cast<uint64_t>(desc.width) || h > static_cast<uint64_t>(desc.height)) {
    return corrupt("jpeg2000: image is " + std::to_string(w) + "x" + std::to_string(h) + ", larger than the " +
                   std::to_string(desc.width) + "x" + std::to_string(desc.height) + " tile");
  }
  const uint64_t tiles = ((uint64_t{x} - tx0 + tw - 1) / tw) * ((uint64_t{y} - ty0 + th - 1) / th);
  if (tiles > 4096) return corrupt("jpeg2000: " + std::to_string(tiles) + " codestream tiles in one TIFF tile");
  if (components != 1 && components != 3 && components != 4) {
    return unsupported("jpeg2000: " + std::to_string(components) + "-component images are not supported");
  }
  return Status();
}

}  // namespace

Jpeg2000Decoder::Jpeg2000Decoder() {
  for (int i = 0; i < 256; ++i) {
    r_cr_[i] = static_cast<int16_t>(std::lround(1.402 * (i - 128)));
    g_cb_[i] = static_cast<int32_t>(std::lround(65536 * (0.5 - 0.34414 * (i - 128))));
    g_cr_[i] = static_cast<int32_t>(std::lround(65536 * -0.71414 * (i - 128)));
    b_cb_[i] = static_cast<int16_t>(std::lround(1.772 * (i - 128)));
  }
}

Status Jpeg2000Decoder::decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out,
                                      int32_t x, int32_t y) {
  TW_RETURN_IF_ERROR(check_siz(data, desc));
  std::string error;
  MemoryStream memory{data.data(), data.size(), 0};
  Codec codec;
  Stream stream(&memory);
  if (!codec.p || !stream.p) return out_of_memory("jpeg2000: cannot create an OpenJPEG decoder");
  route_openjpeg_messages(codec.p, &error);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec.p, &params)) return corrupt("jpeg2000: decoder setup failed");
  // 0: OpenJPEG decodes on the calling thread (1 would start a worker thread for every codec, i.e. every
  // tile, and hand the tile's code-blocks to it); parallelism comes from decoding many tiles at once.
  opj_codec_set_threads(codec.p, 0);
  Image image;
  auto fail = [&](const char* what) {
    return corrupt(std::string("jpeg2000: ") + (error.empty() ? what : error));
  };
  if (!opj_read_header(stream.p, codec.p, &image.p)) return fail("cannot read the codestream header");
  const int64_t img_w = static_cast<int64_t>(image.p->x1) - image.p->x0;
  const int64_t img_h = static_cast<int64_t>(image.p->y1) - image.p->y0;
  if (img_w < x + out.width || img_h < y + out.height) {
    return corrupt("jpeg2000: image is " + std::to_string(img_w) + "x" + std::to_string(img_h) +
                   ", smaller than the " + std::to_string(desc.width) + "x" + std::to_string(desc.height) + " tile");
  }
  if (image.p->numcomps != 3 && image.p->numcomps != 1) {
    return unsupported("jpeg2000: " + std::to_string(image.p->numcomps) + "-component images are not supported");
  }
  const bool whole = x == 0 && y == 0 && out.width == img_w && out.height == img_h;
  // The window's absolute origin on the reference grid (opj_set_decode_area moves image->x0/y0).
  const int64_t ax = static_cast<int64_t>(image.p->x0) + x, ay = static_cast<int64_t>(image.p->y0) + y;
  // The decode area starts on a multiple of the coarsest component subsampling, so that every sample the
  // window replicates lies inside the decoded part of its component.
  OPJ_UINT32 step_x = 1, step_y = 1;
  for (OPJ_UINT32 c = 0; c < image.p->numcomps; ++c) {
    step_x = std::max(step_x, std::max<OPJ_UINT32>(image.p->comps[c].dx, 1));
    step_y = std::max(step_y, std::max<OPJ_UINT32>(image.p->comps[c].dy, 1));
  }
  const int64_t area_x0 = ax / step_x * step_x, area_y0 = ay / step_y * step_y;
  if (!whole && !opj_set_decode_area(codec.p, image.p, static_cast<OPJ_INT32>(area_x0),
                                     static_cast<OPJ_INT32>(area_y0),
                                     static_cast<OPJ_INT32>(ax + out.width), static_cast<OPJ_INT32>(ay + out.height))) {
    return fail("cannot set the decode area");
  }
  if (!opj_decode(codec.p, stream.p, image.p) || !opj_end_decompress(codec.p, stream.p)) {
    return fail("cannot decode the codestream");
  }
  const int n = static_cast<int>(image.p->numcomps);
  const opj_image_comp_t* comps = image.p->comps;
  // Own samples (one channel of 8 or 16 bits) take components of up to that precision; RGB takes 8-bit
  // colour components, or one grey component of up to 16 bits rendered by its high byte.
  const bool own = out.channels == 1;
  const int max_prec = own ? 8 * out.sample_bytes : n == 1 ? 16 : 8;
  if (own && n != 1) return unsupported("jpeg2000: " + std::to_string(n) + " components read as one channel");
  for (int c = 0; c < n; ++c) {
    if (comps[c].data == nullptr || comps[c].prec == 0 || static_cast<int>(comps[c].prec) > max_prec ||
        (n == 3 && comps[c].prec != 8) || comps[c].sgnd || comps[c].dx == 0 || comps[c].dy == 0) {
      return unsupported("jpeg2000: component " + std::to_string(c) + " holds " + (comps[c].sgnd ? "signed " : "") +
                         std::to_string(comps[c].prec) + "-bit samples, not unsigned ones of up to " +
                         std::to_string(n == 3 ? 8 : max_prec) + " bits");
    }
  }
  const int grey_shift = n == 1 && !own ? std::max(0, static_cast<int>(comps[0].prec) - 8) : 0;
  // Component c's sample for window pixel (i, j) sits at ((ax + i) / dx - comp.x0, ...) in its plane. The
  // columns are computed once per window and everything the loops read is local: the output's uint8_t
  // stores may alias any memory, so fields read through pointers inside the loop were reloaded (and the
  // column divided) for every pixel - 10% of a patch's time on one core before.
  const size_t width = static_cast<size_t>(out.width);
  std::vector<int32_t> columns(static_cast<size_t>(n) * width);
  for (int c = 0; c < n; ++c) {
    for (size_t i = 0; i < width; ++i) {
      columns[static_cast<size_t>(c) * width + i] = static_cast<int32_t>(std::clamp<int64_t>(
          (ax + static_cast<int64_t>(i)) / comps[c].dx - comps[c].x0, 0, static_cast<int64_t>(comps[c].w) - 1));
    }
  }
  const bool ycbcr = n == 3 && desc.color == ColorSpace::kYCbCr;
  const int16_t* const r_cr = r_cr_;
  const int32_t* const g_cb = g_cb_;
  const int32_t* const g_cr = g_cr_;
  const int16_t* const b_cb = b_cb_;
  for (int32_t j = 0; j < out.height; ++j) {
    const OPJ_INT32* row[3] = {nullptr, nullptr, nullptr};
    for (int c = 0; c < n; ++c) {
      const int64_t sy = std::clamp<int64_t>((ay + j) / comps[c].dy - comps[c].y0, 0, comps[c].h - 1);
      row[c] = comps[c].data + sy * comps[c].w;
    }
    uint8_t* d = out.row(j);
    const int32_t* col0 = columns.data();
    if (own) {
      const OPJ_INT32* r0 = row[0];
      if (out.sample_bytes == 1) {
        for (size_t i = 0; i < width; ++i) d[i] = clamp8(r0[col0[i]]);
      } else {
        for (size_t i = 0; i < width; ++i) {
          const uint16_t v = static_cast<uint16_t>(std::clamp<OPJ_INT32>(r0[col0[i]], 0, 65535));
          std::memcpy(d + 2 * i, &v, 2);
        }
      }
      continue;
    }
    if (n == 1) {
      const OPJ_INT32* r0 = row[0];
      for (size_t i = 0; i < width; ++i, d += 3) d[0] = d[1] = d[2] = clamp8(r0[col0[i]] >> grey_shift);
      continue;
    }
    const int32_t* col1 = col0 + width;
    const int32_t* col2 = col1 + width;
    const OPJ_INT32 *r0 = row[0], *r1 = row[1], *r2 = row[2];
    if (ycbcr) {
      for (size_t i = 0; i < width; ++i, d += 3) {
        const int y0 = clamp8(r0[col0[i]]), cb = clamp8(r1[col1[i]]), cr = clamp8(r2[col2[i]]);
        d[0] = clamp8(y0 + r_cr[cr]);
        d[1] = clamp8(y0 + ((g_cb[cb] + g_cr[cr]) >> 16));
        d[2] = clamp8(y0 + b_cb[cb]);
      }
    } else {
      for (size_t i = 0; i < width; ++i, d += 3) {
        d[0] = clamp8(r0[col0[i]]);
        d[1] = clamp8(r1[col1[i]]);
        d[2] = clamp8(r2[col2[i]]);
      }
    }
  }
  return Status();
}

}  // namespace tilewise::codecs
