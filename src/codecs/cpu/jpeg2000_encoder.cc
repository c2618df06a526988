#include "codecs/cpu/jpeg2000_encoder.h"
#include "codecs/cpu/openjpeg_messages.h"

#include <openjpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

namespace tilewise::codecs {

namespace {

// An OpenJPEG output stream into a growing buffer.
struct Output {
  std::vector<uint8_t>* bytes;
  size_t pos = 0;
};

OPJ_SIZE_T stream_write(void* buffer, OPJ_SIZE_T n, void* user) {
  auto* o = static_cast<Output*>(user);
  if (o->pos + n > o->bytes->size()) o->bytes->resize(o->pos + n);
  std::memcpy(o->bytes->data() + o->pos, buffer, n);
  o->pos += n;
  return n;
}
OPJ_OFF_T stream_skip(OPJ_OFF_T n, void* user) {
  auto* o = static_cast<Output*>(user);
  if (n < 0 && static_cast<size_t>(-n) > o->pos) return -1;
  o->pos = static_cast<size_t>(static_cast<OPJ_OFF_T>(o->pos) + n);
  if (o->pos > o->bytes->size()) o->bytes->resize(o->pos);
  return n;
}
OPJ_BOOL stream_seek(OPJ_OFF_T to, void* user) {
  auto* o = static_cast<Output*>(user);
  if (to < 0) return OPJ_FALSE;
  o->pos = static_cast<size_t>(to);
  if (o->pos > o->bytes->size()) o->bytes->resize(o->pos);
  return OPJ_TRUE;
}

struct CodecDeleter {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct ImageDeleter {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};
struct StreamDeleter {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};

}  // namespace

Status encode_jpeg2000(const ImageView& tile, bool lossless, int quality, std::vector<uint8_t>& out) {
  if ((tile.sample_bytes != 1 && tile.sample_bytes != 2) || (tile.channels != 1 && tile.channels != 3) ||
      tile.width <= 0 || tile.height <= 0) {
    return invalid_argument("jpeg2000: tiles of one or three components of 8 or 16 bits");
  }
  const int components = tile.channels;
  const int bits = tile.sample_bytes * 8;
  opj_image_cmptparm_t params[3] = {};
  for (int c = 0; c < components; ++c) {
    params[c].dx = params[c].dy = 1;
    params[c].w = static_cast<OPJ_UINT32>(tile.width);
    params[c].h = static_cast<OPJ_UINT32>(tile.height);
    params[c].prec = static_cast<OPJ_UINT32>(bits);
    params[c].sgnd = 0;
  }
  std::unique_ptr<opj_image_t, ImageDeleter> image(
      opj_image_create(static_cast<OPJ_UINT32>(components), params, components == 3 ? OPJ_CLRSPC_SRGB : OPJ_CLRSPC_GRAY));
  if (!image) return internal_error("jpeg2000: cannot allocate the image");
  image->x1 = static_cast<OPJ_UINT32>(tile.width);
  image->y1 = static_cast<OPJ_UINT32>(tile.height);
  for (int32_t y = 0; y < tile.height; ++y) {
    const uint8_t* row = static_cast<const uint8_t*>(tile.data) + static_cast<size_t>(y) * static_cast<size_t>(tile.stride);
    for (int32_t x = 0; x < tile.width; ++x) {
      for (int c = 0; c < components; ++c) {
        const size_t at = (static_cast<size_t>(x) * components + static_cast<size_t>(c)) * tile.sample_bytes;
        uint16_t v = row[at];
        if (bits == 16) std::memcpy(&v, row + at, 2);
        image->comps[c].data[static_cast<size_t>(y) * static_cast<size_t>(tile.width) + static_cast<size_t>(x)] = v;
      }
    }
  }
  opj_cparameters_t p;
  opj_set_default_encoder_parameters(&p);
  p.tcp_numlayers = 1;
  p.tcp_mct = components == 3 ? 1 : 0;
  p.irreversible = lossless ? 0 : 1;
  if (lossless) {
    p.tcp_rates[0] = 0;  // every bit
    p.cp_disto_alloc = 1;
  } else {
    p.tcp_distoratio[0] = 20.0f + static_cast<float>(std::clamp(quality, 1, 100)) / 4.0f;
    p.cp_fixed_quality = 1;
  }
  p.numresolution = 6;
  while (p.numresolution > 1 && (1 << (p.numresolution - 1)) > std::min(tile.width, tile.height)) --p.numresolution;
  std::unique_ptr<opj_codec_t, CodecDeleter> codec(opj_create_compress(OPJ_CODEC_J2K));
  std::string error;
  route_openjpeg_messages(codec.get(), &error);
  if (!opj_setup_encoder(codec.get(), &p, image.get())) return internal_error("jpeg2000: encoder set-up failed: " + error);
  out.clear();
  Output sink{&out, 0};
  std::unique_ptr<opj_stream_t, StreamDeleter> stream(opj_stream_create(1 << 16, OPJ_FALSE));
  if (!stream) return internal_error("jpeg2000: cannot create a stream");
  opj_stream_set_user_data(stream.get(), &sink, nullptr);
  opj_stream_set_write_function(stream.get(), stream_write);
  opj_stream_set_skip_function(stream.get(), stream_skip);
  opj_stream_set_seek_function(stream.get(), stream_seek);
  if (!opj_start_compress(codec.get(), image.get(), stream.get()) || !opj_encode(codec.get(), stream.get()) ||
      !opj_end_compress(codec.get(), stream.get())) {
    return internal_error("jpeg2000: encoding failed: " + error);
  }
  out.resize(sink.pos);
  return Status();
}

}  // namespace tilewise::codecs
