#include "codecs/cpu/jpeg_decoder.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

namespace tilewise::codecs {

struct JpegDecoder::State {
  struct ErrorManager {
    jpeg_error_mgr pub;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
  };
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  std::vector<uint8_t> row;  // for JPEGs wider than the output view

  static void on_error(j_common_ptr cinfo) {
    auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, e->message);
    std::longjmp(e->jump, 1);
  }
  // libjpeg reports recoverable corruption (truncated data, bad Huffman codes) as warnings and goes on
  // painting grey; tilewise treats them as errors so that damaged tiles are reported, not guessed.
  // Extraneous bytes before a marker are harmless and common in scanner output, so they are tolerated.
  static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0 && cinfo->err->msg_code != JWRN_EXTRANEOUS_DATA) on_error(cinfo);
  }
};

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {
  std::memset(&state_->cinfo, 0, sizeof state_->cinfo);
  state_->cinfo.err = jpeg_std_error(&state_->err.pub);
  state_->err.pub.error_exit = &State::on_error;
  state_->err.pub.emit_message = &State::on_message;
  state_->err.pub.output_message = [](j_common_ptr) {};
  jpeg_create_decompress(&state_->cinfo);
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&state_->cinfo); }

namespace {

// Everything between setjmp and a possible longjmp is plain C data: no destructors are skipped.
bool decode_impl(jpeg_decompress_struct* cinfo, std::jmp_buf& jump, std::span<const uint8_t> data,
                 const TileDesc& desc, const ImageView& out, std::vector<uint8_t>* row, char* error) {
  if (setjmp(jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  if (!desc.jpeg_tables.empty()) {
    jpeg_mem_src(cinfo, desc.jpeg_tables.data(), static_cast<unsigned long>(desc.jpeg_tables.size()));
    jpeg_read_header(cinfo, FALSE);  // tables-only stream: primes quantisation and Huffman tables
  }
  jpeg_mem_src(cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->num_components == 3) {
    // TIFF's Photometric says what the components are; JPEG streams in TIFF rarely carry JFIF/Adobe
    // markers (Aperio's RGB tiles have none), so libjpeg's own guess would be YCbCr for both.
    cinfo->jpeg_color_space = desc.color == ColorSpace::kYCbCr ? JCS_YCbCr : JCS_RGB;
  } else if (cinfo->num_components != 1) {
    std::snprintf(error, JMSG_LENGTH_MAX, "%d-component JPEG is not supported", cinfo->num_components);
    jpeg_abort_decompress(cinfo);
    return false;
  }
  cinfo->out_color_space = JCS_RGB;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_width < static_cast<JDIMENSION>(out.width) ||
      cinfo->output_height < static_cast<JDIMENSION>(out.height)) {
    std::snprintf(error, JMSG_LENGTH_MAX, "image is %ux%u, smaller than the %dx%d tile", cinfo->output_width,
                  cinfo->output_height, out.width, out.height);
    jpeg_abort_decompress(cinfo);
    return false;
  }
  const bool direct = cinfo->output_width == static_cast<JDIMENSION>(out.width);
  if (!direct && row->size() < static_cast<size_t>(cinfo->output_width) * 3) {
    row->resize(static_cast<size_t>(cinfo->output_width) * 3);
  }
  while (cinfo->output_scanline < static_cast<JDIMENSION>(out.height)) {
    JSAMPROW dest = direct ? out.row(cinfo->output_scanline) : row->data();
    const JDIMENSION y = cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &dest, 1);
    if (!direct) std::memcpy(out.row(y), row->data(), out.row_bytes());
  }
  // Rows below the view (padding) are never decoded.
  jpeg_abort_decompress(cinfo);
  return true;
}

}  // namespace

Status JpegDecoder::decode(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out) {
  if (data.size() < 4) return corrupt("jpeg: " + std::to_string(data.size()) + "-byte tile is too short");
  state_->err.message[0] = '\0';
  if (!decode_impl(&state_->cinfo, state_->err.jump, data, desc, out, &state_->row, state_->err.message)) {
    return corrupt(std::string("jpeg: ") + state_->err.message);
  }
  return Status();
}

}  // namespace tilewise::codecs
