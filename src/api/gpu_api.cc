#include "codecs/gpu/gpu_decoder.h"
#include "tilewise/memory.h"

#ifdef TILEWISE_HAVE_GPU
#include "codecs/gpu/nvimgcodec_library.h"
#endif

namespace tilewise {

Status gpu_status(int device) { return codecs::gpu::device_status(device); }

void set_nvimgcodec_directory(const std::string& directory) {
#ifdef TILEWISE_HAVE_GPU
  codecs::gpu::set_library_directory(directory);
#else
  (void)directory;
#endif
}

void* allocate_device_pixels(size_t bytes, int device, Status* error) {
  auto p = codecs::gpu::device_malloc(bytes, device);
  if (!p.ok()) {
    if (error) *error = p.status();
    return nullptr;
  }
  return *p;
}

void free_device_pixels(void* buffer, int device) { codecs::gpu::device_free(buffer, device); }

Status fill_device_pixels(uint8_t* buffer, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                          int device) {
  TW_ASSIGN_OR_RETURN(auto decoder, codecs::gpu::GpuDecoderPool::acquire(device));
  TW_RETURN_IF_ERROR(codecs::gpu::device_fill(buffer, pitch, width, height, rgb, decoder->stream()));
  return codecs::gpu::device_synchronize(decoder->stream());
}

}  // namespace tilewise
