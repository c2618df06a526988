// JPEG 2000 encoding (OpenJPEG, the library the decoder uses): one tile of 8- or 16-bit samples, one or
// three components, to a J2K codestream (no JP2 boxes: what TIFF 33005 and DICOM's JPEG 2000 syntaxes
// hold). Three components go through the codestream's own colour transform (the reversible one when
// lossless, the irreversible one when lossy), so a decoder gives RGB back. Lossless: the 5/3 wavelet, every
// bit kept. Lossy: the 9/7 wavelet, one quality layer aimed at a PSNR of 20 + quality / 4 dB (quality 90:
// 42.5 dB, 100: 45 dB). Resolution levels: 6, fewer for tiles under 32 pixels on a side.
//
// Thread behaviour: stateless; call from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

// Encodes `tile` (host memory, packed or strided rows; samples in host byte order) into `out`.
// InvalidArgument for other sample sizes or channel counts.
Status encode_jpeg2000(const ImageView& tile, bool lossless, int quality, std::vector<uint8_t>& out);

}  // namespace tilewise::codecs
