#include "codecs/jpeg/jpeg_encoder.h"

#include <csetjmp>
#include <cstdio>
#include <string>
#include <vector>

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

namespace tilewise::codecs {

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Output into a vector the caller owns (libjpeg's own jpeg_mem_dest leaves a buffer that is hard to free
// correctly after an error), grown by doubling.
struct VectorDestination {
  jpeg_destination_mgr pub;
  std::vector<uint8_t>* bytes;

  static void init(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
    d->bytes->resize(64 << 10);
    d->pub.next_output_byte = d->bytes->data();
    d->pub.free_in_buffer = d->bytes->size();
  }
  static boolean grow(j_compress_ptr cinfo) {  // called when the buffer is full
    auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
    const size_t used = d->bytes->size();
    d->bytes->resize(used * 2);
    d->pub.next_output_byte = d->bytes->data() + used;
    d->pub.free_in_buffer = d->bytes->size() - used;
    return TRUE;
  }
  static void term(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
    d->bytes->resize(d->bytes->size() - d->pub.free_in_buffer);
  }
};

// Between setjmp and a possible longjmp there are only plain C data and libjpeg's frames: no destructor is
// skipped (the vector lives in the caller's frame).
bool compress(jpeg_compress_struct* cinfo, ErrorManager* err, VectorDestination* dest, const uint8_t* rgb,
              int32_t width, int32_t height, int quality, bool subsample, int64_t stride) {
  if (setjmp(err->jump)) return false;
  jpeg_create_compress(cinfo);
  dest->pub.init_destination = &VectorDestination::init;
  dest->pub.empty_output_buffer = &VectorDestination::grow;
  dest->pub.term_destination = &VectorDestination::term;
  cinfo->dest = &dest->pub;
  cinfo->image_width = static_cast<JDIMENSION>(width);
  cinfo->image_height = static_cast<JDIMENSION>(height);
  cinfo->input_components = 3;
  cinfo->in_color_space = JCS_RGB;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, quality, TRUE);
  cinfo->comp_info[0].h_samp_factor = cinfo->comp_info[0].v_samp_factor = subsample ? 2 : 1;
  for (int c = 1; c < 3; ++c) cinfo->comp_info[c].h_samp_factor = cinfo->comp_info[c].v_samp_factor = 1;
  jpeg_start_compress(cinfo, TRUE);
  while (cinfo->next_scanline < cinfo->image_height) {
    auto* row = const_cast<JSAMPROW>(rgb + static_cast<int64_t>(cinfo->next_scanline) * stride);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  return true;
}

}  // namespace

Result<std::vector<uint8_t>> encode_jpeg_rgb(const uint8_t* rgb, int32_t width, int32_t height, int quality,
                                             bool subsample, int64_t stride) {
  if (stride == 0) stride = int64_t{width} * 3;
  if (!rgb || width <= 0 || height <= 0 || width > 65500 || height > 65500 || quality < 1 || quality > 100) {
    return invalid_argument("jpeg encode: " + std::to_string(width) + " x " + std::to_string(height) +
                            " at quality " + std::to_string(quality) + " is not encodable");
  }
  jpeg_compress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = &on_error;
  std::vector<uint8_t> bytes;
  VectorDestination dest{};
  dest.bytes = &bytes;
  const bool ok = compress(&cinfo, &err, &dest, rgb, width, height, quality, subsample, stride);
  jpeg_destroy_compress(&cinfo);
  if (!ok) return internal_error(std::string("jpeg encode: ") + err.message);
  return bytes;
}

}  // namespace tilewise::codecs
