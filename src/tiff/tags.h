// TIFF tag numbers and field types used by tilewise (TIFF 6.0, BigTIFF, Adobe TIFF Technical Note 2).
#pragma once

#include <cstdint>

namespace tilewise::tiff {

enum Tag : uint16_t {
  kNewSubfileType = 254,
  kSubfileType = 255,
  kImageWidth = 256,
  kImageLength = 257,
  kBitsPerSample = 258,
  kCompression = 259,
  kPhotometric = 262,
  kDocumentName = 269,
  kImageDescription = 270,
  kMake = 271,
  kModel = 272,
  kStripOffsets = 273,
  kOrientation = 274,
  kSamplesPerPixel = 277,
  kRowsPerStrip = 278,
  kStripByteCounts = 279,
  kXResolution = 282,
  kYResolution = 283,
  kPlanarConfiguration = 284,
  kXPosition = 286,
  kYPosition = 287,
  kResolutionUnit = 296,
  kSoftware = 305,
  kDateTime = 306,
  kArtist = 315,
  kHostComputer = 316,
  kPredictor = 317,
  kTileWidth = 322,
  kTileLength = 323,
  kTileOffsets = 324,
  kTileByteCounts = 325,
  kSubIfds = 330,
  kExtraSamples = 338,
  kSampleFormat = 339,
  kJpegTables = 347,
  kYCbCrSubSampling = 530,
  kXmp = 700,  // XMLPacket (Ventana keeps its metadata there)
  kCopyright = 33432,
  kImageDepth = 32997,
  kIccProfile = 34675,
  // Hamamatsu NDPI's vendor tags (formats/hamamatsu_ndpi.cc).
  kNdpiFormatFlag = 65420,
  kNdpiSourceLens = 65421,
  kNdpiXOffset = 65422,
  kNdpiYOffset = 65423,
  kNdpiFocalPlane = 65424,
  kNdpiMcuStarts = 65426,
  kNdpiReference = 65427,
  kNdpiPropertyMap = 65449,
};

enum FieldType : uint16_t {
  kByte = 1,
  kAscii = 2,
  kShort = 3,
  kLong = 4,
  kRational = 5,
  kSByte = 6,
  kUndefined = 7,
  kSShort = 8,
  kSLong = 9,
  kSRational = 10,
  kFloat = 11,
  kDouble = 12,
  kIfd = 13,
  kLong8 = 16,
  kSLong8 = 17,
  kIfd8 = 18,
};

// Bytes per value of a field type; 0 for types this parser does not know (such tags are skipped).
inline uint32_t field_type_size(uint16_t type) {
  switch (type) {
    case kByte: case kAscii: case kSByte: case kUndefined: return 1;
    case kShort: case kSShort: return 2;
    case kLong: case kSLong: case kFloat: case kIfd: return 4;
    case kRational: case kSRational: case kDouble: case kLong8: case kSLong8: case kIfd8: return 8;
    default: return 0;
  }
}

// TIFF compression values (tag 259).
enum CompressionCode : uint32_t {
  kCompressionNone = 1,
  kCompressionLzw = 5,
  kCompressionOldJpeg = 6,
  kCompressionJpeg = 7,
  kCompressionAdobeDeflate = 8,
  kCompressionDeflate = 32946,
  kCompressionPackBits = 32773,
  kCompressionAperioJp2kYCbCr = 33003,
  kCompressionAperioJp2kRgb = 33005,
  kCompressionZstd = 50000,
};

enum PhotometricCode : uint32_t {
  kPhotometricMinIsWhite = 0,
  kPhotometricMinIsBlack = 1,
  kPhotometricRgb = 2,
  kPhotometricPalette = 3,
  kPhotometricYCbCr = 6,
};

}  // namespace tilewise::tiff
