// JPEG XR through jxrlib (Debian's libjxr, the reference implementation), inside the helper process only
// (util/worker_process.h says why). The samples are copied in the stream's own order (CZI stores BGR
// whatever the stream's pixel-format label says), so no format converter runs.
#include "codecs/jpegxr_worker/jxrlib_decode.h"

#include <cstring>
#include <memory>
#include <string>

// jxrlib's headers define min and max as macros: included after every C++ header, and the macros dropped.
#include <JXRGlue.h>
#undef min
#undef max

namespace tilewise::codecs::jpegxr_worker {

namespace {
Status jxr_error(const char* what, ERR e) {
  return corrupt(std::string("jpeg-xr: ") + what + " failed (" + std::to_string(e) + ")");
}
}  // namespace

Result<size_t> jxrlib_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t bytes_per_pixel) {
  PKFactory* factory = nullptr;
  ERR e = PKCreateFactory(&factory, PK_SDK_VERSION);
  if (Failed(e)) return jxr_error("PKCreateFactory", e);
  std::unique_ptr<PKFactory, void (*)(PKFactory*)> factory_guard(factory, [](PKFactory* f) { f->Release(&f); });
  WMPStream* stream = nullptr;
  e = factory->CreateStreamFromMemory(&stream, const_cast<uint8_t*>(in.data()), in.size());
  if (Failed(e)) return jxr_error("CreateStreamFromMemory", e);
  PKImageDecode* decoder = nullptr;
  e = PKImageDecode_Create_WMP(&decoder);
  if (Failed(e)) {
    stream->Close(&stream);
    return jxr_error("PKImageDecode_Create_WMP", e);
  }
  std::unique_ptr<PKImageDecode, void (*)(PKImageDecode*)> decoder_guard(decoder,
                                                                         [](PKImageDecode* d) { d->Release(&d); });
  decoder->fStreamOwner = !0;  // the decoder closes the stream
  e = decoder->Initialize(decoder, stream);
  if (Failed(e)) return corrupt("jpeg-xr: not a JPEG XR stream (" + std::to_string(e) + ")");
  I32 w = 0, h = 0;
  decoder->GetSize(decoder, &w, &h);
  PKPixelFormatGUID format;
  decoder->GetPixelFormat(decoder, &format);
  int32_t bpp = 0;
  if (IsEqualGUID(format, GUID_PKPixelFormat24bppBGR) || IsEqualGUID(format, GUID_PKPixelFormat24bppRGB)) bpp = 3;
  if (IsEqualGUID(format, GUID_PKPixelFormat48bppRGB)) bpp = 6;
  if (IsEqualGUID(format, GUID_PKPixelFormat8bppGray)) bpp = 1;
  if (IsEqualGUID(format, GUID_PKPixelFormat16bppGray)) bpp = 2;
  if (IsEqualGUID(format, GUID_PKPixelFormat32bppGrayFloat)) bpp = 4;
  if (bpp != bytes_per_pixel) {
    return corrupt("jpeg-xr: the stream's pixel format has " + std::to_string(bpp) + " bytes per pixel, the subblock " +
                   std::to_string(bytes_per_pixel));
  }
  if (w != width || h != height) {
    return corrupt("jpeg-xr: the stream is " + std::to_string(w) + "x" + std::to_string(h) + ", the subblock " +
                   std::to_string(width) + "x" + std::to_string(height));
  }
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(bpp);
  const size_t bytes = stride * static_cast<size_t>(height);
  if (bytes > out.size()) return corrupt("jpeg-xr: the stream holds more pixels than the subblock");
  PKRect rect = {0, 0, width, height};
  e = decoder->Copy(decoder, &rect, out.data(), static_cast<U32>(stride));
  if (Failed(e)) return jxr_error("decoding", e);
  return bytes;
}

}  // namespace tilewise::codecs::jpegxr_worker
