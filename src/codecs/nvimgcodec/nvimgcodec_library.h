// NvImageCodecLibrary: nvImageCodec 0.8.x loaded at run time with dlopen.
//
// tilewise compiles against the header of the nvidia-nvimgcodec-cu13 0.8 wheel but never links the library:
// without it (or without a GPU) everything else works and device requests fail with a clear error. The
// version is checked through nvimgcodecGetProperties, since nvImageCodec breaks its ABI at every minor
// release (0.9 renamed TIFF fields and has a GPU region-decoding regression).
#pragma once

#include <nvimgcodec.h>

#include <cstring>
#include <string>

#include "tilewise/status.h"

namespace tilewise::codecs::nvimgcodec {

struct NvImageCodecLibrary {
  decltype(&nvimgcodecGetProperties) GetProperties = nullptr;
  decltype(&nvimgcodecInstanceCreate) InstanceCreate = nullptr;
  decltype(&nvimgcodecInstanceDestroy) InstanceDestroy = nullptr;
  decltype(&nvimgcodecDecoderCreate) DecoderCreate = nullptr;
  decltype(&nvimgcodecDecoderDestroy) DecoderDestroy = nullptr;
  decltype(&nvimgcodecDecoderDecode) DecoderDecode = nullptr;
  decltype(&nvimgcodecCodeStreamCreateFromHostMem) CodeStreamCreateFromHostMem = nullptr;
  decltype(&nvimgcodecCodeStreamDestroy) CodeStreamDestroy = nullptr;
  decltype(&nvimgcodecCodeStreamGetImageInfo) CodeStreamGetImageInfo = nullptr;
  decltype(&nvimgcodecImageCreate) ImageCreate = nullptr;
  decltype(&nvimgcodecImageDestroy) ImageDestroy = nullptr;
  decltype(&nvimgcodecFutureWaitForAll) FutureWaitForAll = nullptr;
  decltype(&nvimgcodecFutureDestroy) FutureDestroy = nullptr;
  decltype(&nvimgcodecFutureGetProcessingStatus) FutureGetProcessingStatus = nullptr;
  decltype(&nvimgcodecEncoderCreate) EncoderCreate = nullptr;
  decltype(&nvimgcodecEncoderDestroy) EncoderDestroy = nullptr;
  decltype(&nvimgcodecEncoderEncode) EncoderEncode = nullptr;
  decltype(&nvimgcodecCodeStreamCreateToHostMem) CodeStreamCreateToHostMem = nullptr;
  decltype(&nvimgcodecExtensionCreate) ExtensionCreate = nullptr;
  uint32_t version = 0;
  std::string directory;  // where libnvimgcodec.so.0 was found (its extensions/ folder sits beside it)
};

// Loads the library once per process. Unsupported with the reason when it is missing or of a wrong version.
Result<const NvImageCodecLibrary*> nvimgcodec_library();

std::string status_name(nvimgcodecStatus_t status);

// An nvImageCodec structure of `type`, zeroed, its type and size set.
template <typename T>
T structure(nvimgcodecStructureType_t type) {
  T s;
  std::memset(&s, 0, sizeof s);
  s.struct_type = type;
  s.struct_size = sizeof(T);
  return s;
}

// The process's nvImageCodec instance (thread-safe; made once per process, again in a forked child), shared
// by every decoder and encoder and destroyed at exit after the at_shutdown() hooks (nvimgcodec_decoder.h).
// It holds the built-in code stream parsers and two extension modules, nvJPEG's and nvJPEG2000's: the only
// ones tilewise uses, and nvImageCodec 0.8 aborts making an encoder while a registered module lacks its
// library (its nvTIFF module without libnvtiff: "free(): invalid pointer").
Result<nvimgcodecInstance_t> process_instance();
// Ok when the instance registered the extension module whose file name starts with `prefix`
// ("libnvjpeg_ext.so", "libnvjpeg2k_ext.so"); Unsupported with the reason otherwise.
Status module_status(const char* prefix);

}  // namespace tilewise::codecs::nvimgcodec
