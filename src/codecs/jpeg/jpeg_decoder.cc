#include "codecs/jpeg/jpeg_decoder.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "codecs/jpeg/markers.h"
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
  std::vector<uint8_t> scratch;     // rows decoded wider than the output view (cropped or padded tiles)
  std::vector<JSAMPROW> row_ptrs;  // one per output row: libjpeg-turbo upsamples fastest given many rows
  std::vector<uint8_t> narrowed;   // a one-MCU-row stream with its SOF narrowed to a window (below)

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

namespace {
// jpeg_create_decompress reports failures (for example a libjpeg whose version differs from the headers
// tilewise was built with) through error_exit, so the jump target must be set first.
bool create_decompress(JpegDecoder::State* st) {
  if (setjmp(st->err.jump)) return false;
  jpeg_create_decompress(&st->cinfo);
  return true;
}
}  // namespace

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {
  std::memset(&state_->cinfo, 0, sizeof state_->cinfo);
  state_->cinfo.err = jpeg_std_error(&state_->err.pub);
  state_->err.pub.error_exit = &State::on_error;
  state_->err.pub.emit_message = &State::on_message;
  state_->err.pub.output_message = [](j_common_ptr) {};
  state_->err.message[0] = '\0';
  if (!create_decompress(state_.get())) {
    init_error_ = std::string("jpeg: libjpeg cannot be initialised: ") + state_->err.message;
  }
}

JpegDecoder::~JpegDecoder() {
  if (init_error_.empty()) jpeg_destroy_decompress(&state_->cinfo);
}

namespace {

struct Window {
  int32_t x, y;  // offset of the output view inside the tile
};

// A stream one MCU row high (a Hamamatsu restart-interval unit: 1,024-4,096 x 8 pixels) is read left to
// right, one MCU after another, so a window of it needs no MCU right of the window: the SOF's width is
// narrowed to the window's right edge plus one iMCU (the margin fancy upsampling reads, as for crops
// below), rounded up to whole MCUs, and libjpeg-turbo stops entropy-decoding there. Taller streams cannot
// be cut this way (their next MCU row follows the first in the stream). Sequential interleaved scans only;
// returns `data` itself when the stream does not qualify or the window reaches its right edge anyway.
std::span<const uint8_t> narrowed_to_window(JpegDecoder::State* st, std::span<const uint8_t> data,
                                            const TileDesc& desc, Window win, int32_t window_width) {
  if (desc.height > 16) return data;  // cheap refusal before any parsing: a tile, not a one-row unit
  Result<JpegFrame> frame = parse_jpeg_frame(data);
  if (!frame.ok() || frame->height == 0 || frame->height > static_cast<uint32_t>(frame->mcu_height) ||
      (frame->sof_marker != 0xC0 && frame->sof_marker != 0xC1) || frame->scan_components != frame->components) {
    return data;
  }
  const uint64_t denom = static_cast<uint64_t>(std::max(1, desc.scale_denom));
  const uint64_t mcu = static_cast<uint64_t>(frame->mcu_width);
  const uint64_t right = (static_cast<uint64_t>(win.x) + static_cast<uint64_t>(window_width)) * denom + mcu;
  const uint64_t narrowed = (right + mcu - 1) / mcu * mcu;
  if (narrowed >= frame->width) return data;
  st->narrowed.assign(data.begin(), data.end());
  set_frame_size(st->narrowed, *frame, static_cast<uint16_t>(narrowed), static_cast<uint16_t>(frame->height));
  return st->narrowed;
}

// Everything between setjmp and a possible longjmp is plain C data or owned by State: no destructor is
// skipped by the jump.
bool decode_impl(JpegDecoder::State* st, std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out,
                 Window win, bool partial) {
  if (partial) data = narrowed_to_window(st, data, desc, win, out.width);
  jpeg_decompress_struct* cinfo = &st->cinfo;
  char* error = st->err.message;
  if (setjmp(st->err.jump)) {
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
    cinfo->out_color_space = JCS_RGB;
  } else if (cinfo->num_components == 2) {
    // Grey + alpha (TIFF ExtraSamples): the components are decoded as they are and the grey one becomes
    // RGB below (the alpha is dropped, as for every other format).
    cinfo->jpeg_color_space = JCS_UNKNOWN;
    cinfo->out_color_space = JCS_UNKNOWN;
  } else if (cinfo->num_components == 1) {
    // A one-channel view takes the grey samples as they are (Sakura's channel planes); otherwise RGB.
    cinfo->out_color_space = out.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  } else {
    std::snprintf(error, JMSG_LENGTH_MAX, "%d-component JPEG is not supported", cinfo->num_components);
    jpeg_abort_decompress(cinfo);
    return false;
  }
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(desc.scale_denom);
  jpeg_start_decompress(cinfo);
  const JDIMENSION need_w = static_cast<JDIMENSION>(win.x + out.width);
  const JDIMENSION need_h = static_cast<JDIMENSION>(win.y + out.height);
  if (cinfo->output_width < need_w || cinfo->output_height < need_h) {
    std::snprintf(error, JMSG_LENGTH_MAX, "image is %ux%u, smaller than the %dx%d tile", cinfo->output_width,
                  cinfo->output_height, desc.width, desc.height);
    jpeg_abort_decompress(cinfo);
    return false;
  }
  // Columns: libjpeg-turbo reconstructs only the iMCU columns covering the crop; rows above the window are
  // entropy-decoded but not reconstructed; rows below are never touched. Fancy (smooth) horizontal chroma
  // upsampling reads the neighbouring chroma sample, which a crop edge replaces by its own, so the crop is
  // widened by one iMCU on each side that has neighbours: the window's pixels then equal a full decode's
  // (tests/cpp/codecs/jpeg_test.cc checks every layout).
  JDIMENSION first_col = 0;
  if (partial && (win.x > 0 || need_w < cinfo->output_width)) {
    // One iMCU of output pixels (DCTSIZE each at full scale, fewer when decoding at a reduced scale).
#if JPEG_LIB_VERSION >= 70
    const JDIMENSION block = static_cast<JDIMENSION>(cinfo->min_DCT_h_scaled_size);
#else
    const JDIMENSION block = static_cast<JDIMENSION>(cinfo->min_DCT_scaled_size);
#endif
    const JDIMENSION margin = static_cast<JDIMENSION>(cinfo->max_h_samp_factor) * block;
    const JDIMENSION x0 = static_cast<JDIMENSION>(win.x) > margin ? static_cast<JDIMENSION>(win.x) - margin : 0;
    const JDIMENSION x1 = std::min<JDIMENSION>(need_w + margin, cinfo->output_width);
    JDIMENSION xoff = x0, width = x1 - x0;
    jpeg_crop_scanline(cinfo, &xoff, &width);
    first_col = static_cast<JDIMENSION>(win.x) - xoff;
  } else {
    first_col = static_cast<JDIMENSION>(win.x);
  }
  const size_t components = static_cast<size_t>(cinfo->output_components);  // 3 (RGB) or 2 (grey + alpha)
  if (win.y > 0) {
    if (partial) {
      jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(win.y));
    } else {
      // Rows above the window are decoded into the scratch area and dropped.
      st->scratch.resize(static_cast<size_t>(cinfo->output_width) * components);
      JSAMPROW row = st->scratch.data();
      while (cinfo->output_scanline < static_cast<JDIMENSION>(win.y)) jpeg_read_scanlines(cinfo, &row, 1);
    }
  }
  const bool same_layout = components == static_cast<size_t>(out.channels);  // RGB into RGB, grey into grey
  const bool direct = same_layout && first_col == 0 && cinfo->output_width == static_cast<JDIMENSION>(out.width);
  const size_t rows = static_cast<size_t>(out.height);
  const size_t decoded_row_bytes = static_cast<size_t>(cinfo->output_width) * components;
  st->row_ptrs.resize(rows);
  if (direct) {
    for (size_t r = 0; r < rows; ++r) st->row_ptrs[r] = out.row(static_cast<int64_t>(r));
  } else {
    st->scratch.resize(decoded_row_bytes * rows);
    for (size_t r = 0; r < rows; ++r) st->row_ptrs[r] = st->scratch.data() + r * decoded_row_bytes;
  }
  size_t done = 0;
  while (done < rows) {
    done += jpeg_read_scanlines(cinfo, st->row_ptrs.data() + done, static_cast<JDIMENSION>(rows - done));
  }
  if (!direct && same_layout) {
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(out.row(static_cast<int64_t>(r)), st->row_ptrs[r] + first_col * components, out.row_bytes());
    }
  } else if (!direct) {
    for (size_t r = 0; r < rows; ++r) {
      const uint8_t* src = st->row_ptrs[r] + first_col * components;
      uint8_t* dst = out.row(static_cast<int64_t>(r));
      for (int32_t i = 0; i < out.width; ++i, src += components, dst += 3) dst[0] = dst[1] = dst[2] = src[0];
    }
  }
  // Rows below the window (and tile padding) are never decoded.
  jpeg_abort_decompress(cinfo);
  return true;
}

}  // namespace

namespace {
bool read_dimensions(JpegDecoder::State* st, std::span<const uint8_t> data, int32_t* w, int32_t* h) {
  jpeg_decompress_struct* cinfo = &st->cinfo;
  if (setjmp(st->err.jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  jpeg_mem_src(cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(cinfo, TRUE);
  *w = static_cast<int32_t>(cinfo->image_width);
  *h = static_cast<int32_t>(cinfo->image_height);
  jpeg_abort_decompress(cinfo);
  return true;
}
}  // namespace

Result<std::pair<int32_t, int32_t>> JpegDecoder::dimensions(std::span<const uint8_t> data) {
  if (!init_error_.empty()) return internal_error(init_error_);
  if (data.size() < 4) return corrupt("jpeg: stream is too short");
  state_->err.message[0] = '\0';
  int32_t w = 0, h = 0;
  if (!read_dimensions(state_.get(), data, &w, &h)) return corrupt(std::string("jpeg: ") + state_->err.message);
  return std::make_pair(w, h);
}

Status JpegDecoder::decode(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out) {
  return decode_window(data, desc, out, 0, 0, false);
}

Status JpegDecoder::decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out,
                                  int32_t x, int32_t y, bool partial) {
  if (!init_error_.empty()) return internal_error(init_error_);
  if (data.size() < 4) return corrupt("jpeg: " + std::to_string(data.size()) + "-byte tile is too short");
  state_->err.message[0] = '\0';
  if (!decode_impl(state_.get(), data, desc, out, Window{x, y}, partial)) {
    return corrupt(std::string("jpeg: ") + state_->err.message);
  }
  return Status();
}

}  // namespace tilewise::codecs
