#include "codecs/jpeg/mcu_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "util/bytes.h"

namespace tilewise::codecs {

namespace {

uint32_t be16(const uint8_t* p) { return internal::load_be16(p); }

// Builds the decoding and writing tables of one DHT table (JPEG Annex C's canonical codes). Unsupported
// where libjpeg would refuse the table too, so that the caller's plain decode reports libjpeg's error.
Status build_table(const uint8_t* counts, const uint8_t* symbols, size_t total, HuffmanTable& t) {
  t = HuffmanTable{};
  std::copy(symbols, symbols + total, t.values.begin());
  uint32_t code = 0;
  size_t k = 0;
  for (int len = 1; len <= 16; ++len) {
    t.value_offset[len] = static_cast<int32_t>(k) - static_cast<int32_t>(code);
    const uint32_t n = counts[len - 1];
    // Checked before the codes are laid out (more codes than the length holds would write past the tables).
    if (n && code + n >= (1u << len)) return unsupported("jpeg: a Huffman table's codes overflow");
    for (uint32_t i = 0; i < n; ++i, ++code, ++k) {
      const uint8_t sym = symbols[k];
      t.code[sym] = static_cast<uint16_t>(code);
      t.length[sym] = static_cast<uint8_t>(len);
      if (len <= HuffmanTable::kLookBits) {
        const int free_bits = HuffmanTable::kLookBits - len;
        const uint32_t first = code << free_bits;
        for (uint32_t j = 0; j < (1u << free_bits); ++j) t.fast[first + j] = static_cast<uint16_t>(len << 8 | sym);
      }
    }
    t.max_code[len] = n ? static_cast<int32_t>(code) - 1 : -1;
    code <<= 1;
  }
  // The skip table (meaningful for AC tables): a code of `len` bits for run r and size s, followed by its
  // s value bits, moves s ? r + 1 : (r == 15 ? 16 : 0 = end of block) along the block.
  for (int sym = 0; sym < 256; ++sym) {
    const int len = t.length[sym], r = sym >> 4, size = sym & 15, total = len + size;
    if (!len || total > HuffmanTable::kSkipBits) continue;
    const int advance = size ? r + 1 : (r == 15 ? 16 : 0);
    const uint32_t first = static_cast<uint32_t>(t.code[sym]) << (HuffmanTable::kSkipBits - len);
    // Every value of the s bits, then every continuation: all prefixes starting with this code.
    for (uint32_t j = 0; j < (1u << (HuffmanTable::kSkipBits - len)); ++j) {
      t.skip[first + j] = static_cast<uint16_t>(total | advance << 5);  // total >= 1: never 0
    }
  }
  t.present = true;
  return Status();
}

Status parse_dht(const uint8_t* seg, size_t length, EntropyLayout& layout) {
  size_t at = 0;
  while (at < length) {
    if (at + 17 > length) return unsupported("jpeg: a DHT segment is too short");
    const uint8_t cls = seg[at] >> 4, id = seg[at] & 15;
    if (cls > 1 || id > 3) return unsupported("jpeg: a DHT table of class " + std::to_string(cls) + " id " + std::to_string(id));
    size_t total = 0;
    for (int i = 0; i < 16; ++i) total += seg[at + 1 + i];
    if (total > 256 || at + 17 + total > length) return unsupported("jpeg: a DHT table is too long");
    HuffmanTable& t = cls == 0 ? layout.dc[id] : layout.ac[id];
    TW_RETURN_IF_ERROR(build_table(seg + at + 1, seg + at + 17, total, t));
    at += 17 + total;
  }
  return Status();
}

struct FrameComponent {
  uint8_t id, h, v;
};

}  // namespace

Result<std::shared_ptr<const EntropyLayout>> parse_entropy_layout(std::span<const uint8_t> b) {
  auto layout = std::make_shared<EntropyLayout>();
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return unsupported("jpeg: the header does not start with SOI");
  std::vector<FrameComponent> frame;
  size_t pos = 2;
  while (pos + 4 <= b.size()) {
    if (b[pos] != 0xFF) return unsupported("jpeg: expected a marker at offset " + std::to_string(pos));
    const uint8_t marker = b[pos + 1];
    if (marker == 0xFF || marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7)) {
      pos += marker == 0xFF ? 1 : 2;
      continue;
    }
    const size_t length = be16(&b[pos + 2]);
    if (length < 2 || pos + 2 + length > b.size()) return unsupported("jpeg: a marker segment runs past the header");
    const uint8_t* seg = &b[pos + 4];
    const size_t seg_len = length - 2;
    if (marker == 0xC0 || marker == 0xC1) {
      if (seg_len < 6 || seg[0] != 8) return unsupported("jpeg: not an 8-bit frame");
      const int n = seg[5];
      if (n < 1 || n > 4 || seg_len < 6 + 3u * n) return unsupported("jpeg: a frame of " + std::to_string(n) + " components");
      int hmax = 1, vmax = 1;
      for (int c = 0; c < n; ++c) {
        const FrameComponent fc{seg[6 + 3 * c], static_cast<uint8_t>(seg[7 + 3 * c] >> 4),
                                static_cast<uint8_t>(seg[7 + 3 * c] & 15)};
        if (fc.h < 1 || fc.h > 4 || fc.v < 1 || fc.v > 4) return unsupported("jpeg: invalid sampling factors");
        hmax = std::max<int>(hmax, fc.h);
        vmax = std::max<int>(vmax, fc.v);
        frame.push_back(fc);
      }
      layout->sof_offset = pos;
      layout->components = n;
      layout->mcu_width = 8 * hmax;
      layout->mcu_height = 8 * vmax;
    } else if (marker >= 0xC2 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8) {  // progressive, lossless, arithmetic
      return unsupported("jpeg: not a sequential Huffman-coded frame");
    } else if (marker == 0xC4) {
      TW_RETURN_IF_ERROR(parse_dht(seg, seg_len, *layout));
    } else if (marker == 0xDA) {
      if (frame.empty() || seg_len < 1) return unsupported("jpeg: SOS without a frame");
      const size_t ns = seg[0];
      if (ns != frame.size() || seg_len < 1 + 2 * ns + 3) return unsupported("jpeg: a scan that is not interleaved");
      if (ns == 1 && (frame[0].h != 1 || frame[0].v != 1)) return unsupported("jpeg: a subsampled single component");
      const uint8_t* spectral = seg + 1 + 2 * ns;
      if (spectral[0] != 0 || spectral[1] != 63 || spectral[2] != 0) return unsupported("jpeg: not a sequential scan");
      for (size_t i = 0; i < ns; ++i) {
        const uint8_t id = seg[1 + 2 * i], tables = seg[2 + 2 * i];
        const auto fc = std::find_if(frame.begin(), frame.end(), [&](const FrameComponent& f) { return f.id == id; });
        if (fc == frame.end()) return unsupported("jpeg: a scan component the frame lacks");
        const uint8_t td = tables >> 4, ta = tables & 15;
        if (td > 3 || ta > 3 || !layout->dc[td].present || !layout->ac[ta].present) {
          return unsupported("jpeg: a scan's Huffman tables are not in the header");
        }
        // libjpeg refuses DC tables with symbols over 15.
        for (int s = 16; s < 256; ++s) {
          if (layout->dc[td].length[s]) return unsupported("jpeg: a DC table with a symbol over 15");
        }
        const int n = fc->h * fc->v;
        for (int j = 0; j < n; ++j) layout->blocks.push_back({static_cast<uint8_t>(fc - frame.begin()), td, ta});
      }
      if (layout->blocks.size() > 10) return unsupported("jpeg: more than 10 blocks per MCU");
      layout->header_end = pos + 2 + length;
      return std::shared_ptr<const EntropyLayout>(std::move(layout));
    } else if (marker == 0xD9) {
      break;
    }
    pos += 2 + length;
  }
  return unsupported("jpeg: the header ends before its SOS");
}

namespace {

// Entropy-coded bytes without their stuffing: the bytes of `in` from `begin` (a data byte) until a marker
// or the stuffed offset `end`, each 0xFF's stuffed 0x00 dropped. `ff` receives the unstuffed index of each
// 0xFF kept (to map unstuffed positions back to stored ones).
void unstuff(std::span<const uint8_t> in, size_t begin, size_t end, std::vector<uint8_t>& out,
             std::vector<uint32_t>* ff) {
  out.clear();
  if (ff) ff->clear();
  end = std::min(end, in.size());
  size_t i = begin;
  while (i < end) {
    const void* hit = std::memchr(in.data() + i, 0xFF, end - i);
    if (!hit) {
      out.insert(out.end(), in.begin() + static_cast<ptrdiff_t>(i), in.begin() + static_cast<ptrdiff_t>(end));
      return;
    }
    const size_t at = static_cast<size_t>(static_cast<const uint8_t*>(hit) - in.data());
    out.insert(out.end(), in.begin() + static_cast<ptrdiff_t>(i), in.begin() + static_cast<ptrdiff_t>(at));
    if (at + 1 >= in.size() || in[at + 1] != 0x00) return;  // a marker (or fill bytes before one)
    if (ff) ff->push_back(static_cast<uint32_t>(out.size()));
    out.push_back(0xFF);
    i = at + 2;
  }
}

// The 57 or more bits from bit `pos` of `p` (which has at least 8 readable bytes from pos / 8), MSB first.
inline uint64_t peek(const uint8_t* p, uint64_t pos) {
  uint64_t v;
  std::memcpy(&v, p + (pos >> 3), 8);
  return __builtin_bswap64(v) << (pos & 7);
}

// Decodes the symbol at the top of `w`: its code length into len; false for an invalid code.
inline bool decode_symbol(const HuffmanTable& t, uint64_t w, int& len, int& sym) {
  const uint16_t e = t.fast[w >> (64 - HuffmanTable::kLookBits)];
  if (e) {
    len = e >> 8;
    sym = e & 0xFF;
    return true;
  }
  for (int l = HuffmanTable::kLookBits + 1; l <= 16; ++l) {
    const int32_t c = static_cast<int32_t>(w >> (64 - l));
    if (c <= t.max_code[l]) {
      const int32_t i = c + t.value_offset[l];
      if (i < 0 || i > 255) return false;
      len = l;
      sym = t.values[static_cast<size_t>(i)];
      return true;
    }
  }
  return false;
}

// MSB-first bits of unstuffed data in a 64-bit buffer: `buf` holds `count` valid bits at its top (and
// possibly some of the following bits below them, which a refill ORs in again identically). The data must
// be readable 8 bytes past any position read.
struct BitReader {
  BitReader(const uint8_t* data, uint64_t skip) : base(data), next(data) {
    refill();
    consume(static_cast<int>(skip));
  }
  // Tops the buffer up to 56-63 valid bits with one 8-byte load.
  void refill() {
    uint64_t v;
    std::memcpy(&v, next, 8);
    buf |= __builtin_bswap64(v) >> count;
    const int bytes = (63 - count) >> 3;
    next += bytes;
    count += bytes * 8;
  }
  void consume(int n) {
    buf <<= n;
    count -= n;
  }
  uint64_t position() const { return static_cast<uint64_t>(next - base) * 8 - static_cast<uint64_t>(count); }
  const uint8_t* base;
  const uint8_t* next;
  uint64_t buf = 0;
  int count = 0;
};

// Bytes a block can consume at most: a 16-bit DC code with 15 bits, 63 AC codes of 16 + 15 bits.
constexpr size_t kBlockBytesMax = (31 + 63 * 31) / 8 + 1;

}  // namespace

Status extend_mcu_index(const EntropyLayout& layout, std::span<const uint8_t> entropy, int64_t mcus, size_t want,
                        McuIndex& index, int32_t spacing) {
  if (spacing < 1) return unsupported("jpeg: a checkpoint spacing below one MCU");
  if (index.points.empty()) index.points.push_back(McuCheckpoint{});
  int64_t mcu = static_cast<int64_t>(index.points.size() - 1) * spacing;
  if (index.points.size() >= want || mcu >= mcus) return Status();
  const McuCheckpoint start = index.points.back();
  const size_t begin = start.bit >> 3;
  thread_local std::vector<uint8_t> data;
  thread_local std::vector<uint32_t> ff;
  unstuff(entropy, begin, entropy.size(), data, &ff);
  const uint64_t nbits = uint64_t{data.size()} * 8;
  data.resize(data.size() + kBlockBytesMax + 16, 0);  // zeros past the end: any overrun is caught per block
  BitReader bits(data.data(), start.bit & 7);
  std::array<int32_t, 4> dc{start.dc[0], start.dc[1], start.dc[2], start.dc[3]};
  size_t ffi = 0;
  while (index.points.size() < want && mcu < mcus) {
    for (int m = 0; m < spacing && mcu < mcus; ++m, ++mcu) {
      for (const EntropyLayout::Block& b : layout.blocks) {
        const HuffmanTable& dct = layout.dc[b.dc_table];
        const HuffmanTable& act = layout.ac[b.ac_table];
        bits.refill();
        int len = 0, s = 0;
        if (!decode_symbol(dct, bits.buf, len, s)) return corrupt("jpeg: an invalid Huffman code in MCU " + std::to_string(mcu));
        bits.consume(len);
        if (s) {
          const uint32_t v = static_cast<uint32_t>(bits.buf >> (64 - s));
          dc[b.component] += v < (1u << (s - 1)) ? static_cast<int32_t>(v) - (1 << s) + 1 : static_cast<int32_t>(v);
          bits.consume(s);
        }
        // As libjpeg: for k in 1..63, a coefficient of run r moves k by r + 1, a run of 16 zeros by 16, end
        // of block stops (so does passing 63).
        for (int k = 1; k < 64;) {
          if (bits.count < 32) bits.refill();
          const uint16_t e = act.skip[bits.buf >> (64 - HuffmanTable::kSkipBits)];
          if (e) {  // code and value within the next kSkipBits bits: one step
            bits.consume(e & 31);
            const int advance = (e >> 5) & 31;
            if (!advance) break;
            k += advance;
            continue;
          }
          int rs = 0;
          if (!decode_symbol(act, bits.buf, len, rs)) {
            return corrupt("jpeg: an invalid Huffman code in MCU " + std::to_string(mcu));
          }
          const int r = rs >> 4;
          s = rs & 15;
          bits.consume(len + s);
          if (s) {
            k += r + 1;
          } else {
            if (r != 15) break;
            k += 16;
          }
        }
        if (bits.position() > nbits) return corrupt("jpeg: the interval's data ends inside MCU " + std::to_string(mcu));
      }
    }
    if (mcu % spacing != 0) break;  // the interval's end, between checkpoints
    McuCheckpoint c;
    const uint64_t pos = bits.position();
    const uint64_t byte = pos >> 3;
    while (ffi < ff.size() && ff[ffi] < byte) ++ffi;
    const uint64_t bit = (begin + byte + ffi) * 8 + (pos & 7);
    if (bit > UINT32_MAX) return unsupported("jpeg: an interval of over 512 MiB");
    c.bit = static_cast<uint32_t>(bit);
    for (size_t i = 0; i < 4; ++i) {
      // Valid 8-bit streams keep DC within +-1,024 (11-bit categories); beyond, no checkpoint is written.
      if (dc[i] < -2047 || dc[i] > 2047) return unsupported("jpeg: a DC predictor out of range in MCU " + std::to_string(mcu));
      c.dc[i] = static_cast<int16_t>(dc[i]);
    }
    index.points.push_back(c);
  }
  return Status();
}

namespace {

// Writes bits MSB first, stuffing a 0x00 after each 0xFF byte, into memory the caller sized for the worst
// case (twice the bytes, each one a 0xFF).
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : p_(out) {}
  // Up to 32 bits (the low `len` of `bits`).
  void put(uint32_t bits, int len) {
    acc_ = (acc_ << len) | (bits & ((uint64_t{1} << len) - 1));
    n_ += len;
    while (n_ >= 8) {
      n_ -= 8;
      emit(static_cast<uint8_t>(acc_ >> n_));
    }
  }
  // 32 bits at once: four bytes stored together unless one of them needs stuffing.
  void put32(uint32_t bits) {
    acc_ = (acc_ << 32) | bits;
    const uint32_t bytes = static_cast<uint32_t>(acc_ >> n_);
    if (((~bytes - 0x01010101u) & bytes & 0x80808080u) == 0) {  // no byte is 0xFF
      const uint32_t be = __builtin_bswap32(bytes);
      std::memcpy(p_, &be, 4);
      p_ += 4;
    } else {
      for (int shift = 24; shift >= 0; shift -= 8) emit(static_cast<uint8_t>(bytes >> shift));
    }
  }
  // Pads the last byte with 1 bits (as encoders do before a marker).
  void pad() {
    if (n_ > 0) put((1u << (8 - n_)) - 1, 8 - n_);
  }
  uint8_t* position() const { return p_; }

 private:
  void emit(uint8_t byte) {
    *p_++ = byte;
    if (byte == 0xFF) *p_++ = 0x00;
  }
  uint8_t* p_;
  uint64_t acc_ = 0;
  int n_ = 0;  // pending bits in acc_ (0-7 between calls)
};

// A DC or AC symbol's code, or false when the table has none for it.
bool put_symbol(BitWriter& w, const HuffmanTable& t, int sym) {
  if (!t.length[sym]) return false;
  w.put(t.code[sym], t.length[sym]);
  return true;
}

// The shared part of resume_stream and resume_rows: `header` with its SOF's height and width set, then
// `prefix` MCUs of which the first sets the checkpoint's DC predictors and the others change nothing (every
// block a zero DC difference and an end of block), then the bits of `entropy` from `from` to `to` (or its
// end), then EOI.
Status write_resumed(const EntropyLayout& layout, std::span<const uint8_t> header, std::span<const uint8_t> entropy,
                     const McuCheckpoint& from, const McuCheckpoint* to, uint64_t height, uint64_t width,
                     int64_t prefix, std::vector<uint8_t>& out) {
  if (header.size() < layout.header_end || width > 65535 || height > 65535 || prefix < 1) {
    return unsupported("jpeg: cannot resume a " + std::to_string(width) + " x " + std::to_string(height) + " stream");
  }
  // The interval's bits from the checkpoint to `to` (or its end), unstuffed.
  const size_t first = from.bit >> 3;
  const size_t last = to ? (to->bit >> 3) : entropy.size();
  if (to && (to->bit < from.bit || last >= entropy.size())) return unsupported("jpeg: checkpoints out of order");
  thread_local std::vector<uint8_t> data;
  unstuff(entropy, first, last, data, nullptr);
  const uint64_t skip = from.bit & 7;
  uint64_t end = uint64_t{data.size()} * 8;
  if (to && (to->bit & 7)) {
    data.push_back(entropy[last]);  // the part of `to`'s byte before it
    end += to->bit & 7;
  }
  if (end < skip) return corrupt("jpeg: the interval's data ends before its checkpoint");
  data.resize(data.size() + 8, 0);
  // The header, then at most twice the bits' bytes (stuffing), the prefix MCUs' (a DC and an AC code of at
  // most 16 bits and 11 value bits per block) and the EOI.
  const size_t head = static_cast<size_t>(layout.header_end);
  const size_t prefix_bytes = static_cast<size_t>(prefix) * layout.blocks.size() * 6 + 8;
  out.resize(head + 2 * ((end - skip) / 8 + prefix_bytes + 8));
  std::memcpy(out.data(), header.data(), head);
  out[layout.sof_offset + 5] = static_cast<uint8_t>(height >> 8);
  out[layout.sof_offset + 6] = static_cast<uint8_t>(height);
  out[layout.sof_offset + 7] = static_cast<uint8_t>(width >> 8);
  out[layout.sof_offset + 8] = static_cast<uint8_t>(width);
  BitWriter w(out.data() + head);
  // The predictor-setting MCU: each component's first block has the checkpoint's DC value (the predictors
  // start at 0), its other blocks none; every block ends at once (end of block).
  std::array<bool, 4> seen{};
  for (int64_t m = 0; m < prefix; ++m) {
    for (const EntropyLayout::Block& b : layout.blocks) {
      const int32_t v = m > 0 || seen[b.component] ? 0 : from.dc[b.component];
      seen[b.component] = true;
      const uint32_t magnitude = static_cast<uint32_t>(v < 0 ? -v : v);
      const int s = magnitude ? std::bit_width(magnitude) : 0;
      if (!put_symbol(w, layout.dc[b.dc_table], s)) {
        return unsupported("jpeg: the DC table cannot write a resuming MCU");
      }
      if (s) w.put(static_cast<uint32_t>(v < 0 ? v - 1 : v), s);  // negative values as their ones' complement
      if (!put_symbol(w, layout.ac[b.ac_table], 0x00)) return unsupported("jpeg: the AC table has no end of block");
    }
  }
  uint64_t pos = skip;
  for (; pos + 32 <= end; pos += 32) w.put32(static_cast<uint32_t>(peek(data.data(), pos) >> 32));
  if (pos < end) w.put(static_cast<uint32_t>(peek(data.data(), pos) >> (64 - (end - pos))), static_cast<int>(end - pos));
  w.pad();
  uint8_t* tail = w.position();
  *tail++ = 0xFF;
  *tail++ = 0xD9;
  out.resize(static_cast<size_t>(tail - out.data()));
  return Status();
}

}  // namespace

Status resume_stream(const EntropyLayout& layout, std::span<const uint8_t> header, std::span<const uint8_t> entropy,
                     const McuCheckpoint& from, const McuCheckpoint* to, int32_t mcus, std::vector<uint8_t>& out) {
  if (mcus < 1) return unsupported("jpeg: cannot resume " + std::to_string(mcus) + " MCUs");
  return write_resumed(layout, header, entropy, from, to, static_cast<uint64_t>(layout.mcu_height),
                       uint64_t(1 + mcus) * static_cast<uint64_t>(layout.mcu_width), 1, out);
}

Status resume_rows(const EntropyLayout& layout, std::span<const uint8_t> header, std::span<const uint8_t> entropy,
                   const McuCheckpoint& from, int32_t width, int32_t rows_height, std::vector<uint8_t>& out) {
  if (width < 1 || rows_height < 1) return unsupported("jpeg: cannot resume an empty image");
  const int64_t row_mcus = (int64_t{width} + layout.mcu_width - 1) / layout.mcu_width;
  return write_resumed(layout, header, entropy, from, nullptr,
                       static_cast<uint64_t>(layout.mcu_height) + static_cast<uint64_t>(rows_height),
                       static_cast<uint64_t>(width), row_mcus, out);
}

}  // namespace tilewise::codecs
