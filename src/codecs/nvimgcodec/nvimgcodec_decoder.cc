#include "codecs/nvimgcodec/nvimgcodec_decoder.h"

#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "codecs/jpeg/jpeg_encoder.h"
#include "codecs/nvimgcodec/cuda_wait.h"
#include "codecs/nvimgcodec/nvimgcodec_library.h"
#include "util/fork_safe.h"
#include "util/settings.h"
#include "util/thread_name.h"

namespace tilewise::codecs::nvimgcodec {

cudaError_t launch_ycbcr_to_rgb(uint8_t* pixels, size_t pitch, int32_t width, int32_t height, cudaStream_t stream);

namespace {

Status cuda_error(const std::string& what, cudaError_t e) { return internal_error(what + ": " + cudaGetErrorString(e)); }

// The process's nvImageCodec instance (nvimgcodec_library.h). Created on first use; destroyed by an
// atexit handler, after every pooled decoder and encoder, before the CUDA runtime unloads.
class Runtime {
 public:
  Result<nvimgcodecInstance_t> instance(const NvImageCodecLibrary& lib) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (instance_) return instance_;
    TW_ASSIGN_OR_RETURN(instance_, create(lib));
    for (Module& m : modules_) m.status = load_extension(lib, instance_, m.prefix);
    return instance_;
  }

  Status module_status(const char* prefix) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Module& m : modules_) {
      if (std::strcmp(m.prefix, prefix) == 0) return m.status;
    }
    return internal_error(std::string("no nvImageCodec module ") + prefix);
  }

  std::mutex mutex_;
  nvimgcodecInstance_t instance_ = nullptr;

 private:
  // The extension modules tilewise decodes and encodes with: nvJPEG's (the hardware engines, the CUDA and
  // hybrid decoders, the CUDA encoder) and nvJPEG2000's. No other module is loaded: nvImageCodec 0.8 aborts
  // ("free(): invalid pointer") making an encoder while a registered module lacks its library (its nvTIFF
  // module without libnvtiff), and tilewise uses none of the CPU, TIFF, BMP or PNM modules.
  struct Module {
    const char* prefix;
    Status status;
  };
  Module modules_[2] = {{"libnvjpeg_ext.so", Status()}, {"libnvjpeg2k_ext.so", Status()}};

  // An instance with the built-in modules (the code stream parsers) only.
  Result<nvimgcodecInstance_t> create(const NvImageCodecLibrary& lib) {
    auto info = structure<nvimgcodecInstanceCreateInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.load_builtin_modules = 1;
    info.load_extension_modules = 0;
    extensions_ = lib.directory + "/extensions";
    if (const uint32_t severity = internal::settings().gpu_log) {  // which backends each decoder got, and why
      info.create_debug_messenger = 1;
      info.message_severity = severity;
      info.message_category = NVIMGCODEC_DEBUG_MESSAGE_CATEGORY_ALL;
    }
    nvimgcodecInstance_t instance = nullptr;
    const nvimgcodecStatus_t s = lib.InstanceCreate(&instance, &info);
    if (s != NVIMGCODEC_STATUS_SUCCESS) return internal_error("nvimgcodecInstanceCreate failed: " + status_name(s));
    return instance;
  }

  // Registers the extension module of extensions/ whose name starts with `module` (its version follows) with
  // `instance`. The module stays loaded for the process.
  Status load_extension(const NvImageCodecLibrary& lib, nvimgcodecInstance_t instance, const std::string& module) {
    std::string path;
    if (DIR* dir = ::opendir(extensions_.c_str())) {
      while (const dirent* entry = ::readdir(dir)) {
        if (std::string(entry->d_name).rfind(module, 0) == 0) path = extensions_ + "/" + entry->d_name;
      }
      ::closedir(dir);
    }
    if (path.empty()) return unsupported("nvImageCodec's " + module + " is not in " + extensions_);
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return unsupported("cannot load " + path + ": " + ::dlerror());
    auto entry = reinterpret_cast<nvimgcodecExtensionModuleEntryFunc_t>(::dlsym(handle, "nvimgcodecExtensionModuleEntry"));
    if (!entry) return unsupported(path + " has no nvimgcodecExtensionModuleEntry");
    auto desc = structure<nvimgcodecExtensionDesc_t>(NVIMGCODEC_STRUCTURE_TYPE_EXTENSION_DESC);
    nvimgcodecStatus_t s = entry(&desc);
    nvimgcodecExtension_t extension = nullptr;
    if (s == NVIMGCODEC_STATUS_SUCCESS) s = lib.ExtensionCreate(instance, &extension, &desc);
    if (s != NVIMGCODEC_STATUS_SUCCESS) return unsupported("cannot register " + path + ": " + status_name(s));
    return Status();  // the extension goes with its instance
  }

  std::string extensions_;
};

Runtime& runtime() {
  static auto* r = new internal::ForkSafe<Runtime>([] { return new Runtime(); });
  return r->get();
}

// The warm-up's tile: 256 x 256 RGB, a gradient with fine texture (so that its entropy-coded data is like a
// tissue tile's, about 2 bits per pixel), baseline 4:2:0 at quality 80; made once per process.
const std::vector<uint8_t>& warm_up_tile() {
  static const std::vector<uint8_t> tile = [] {
    constexpr int32_t kSize = 256;
    std::vector<uint8_t> rgb(static_cast<size_t>(kSize) * kSize * 3);
    uint32_t noise = 12345;
    for (size_t i = 0; i < rgb.size(); ++i) {
      noise = noise * 1664525u + 1013904223u;  // a fixed LCG: the same tile in every process
      const size_t pixel = i / 3;
      const int32_t x = static_cast<int32_t>(pixel % kSize), y = static_cast<int32_t>(pixel / kSize);
      rgb[i] = static_cast<uint8_t>((x + y + static_cast<int32_t>(i % 3) * 60 + static_cast<int32_t>(noise >> 27)) & 0xff);
    }
    auto jpeg = encode_jpeg_rgb(rgb.data(), kSize, kSize, 80, /*subsample=*/true);
    return jpeg.ok() ? std::move(jpeg).value() : std::vector<uint8_t>();
  }();
  return tile;
}

class NvImageCodecDecoder final : public Decoder {
 public:
  NvImageCodecDecoder(const NvImageCodecLibrary& lib, nvimgcodecInstance_t instance, int device)
      : lib_(lib), instance_(instance), device_(device) {}

  Status init() {
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cuda_error("cudaSetDevice", e);
    e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cuda_error("cudaStreamCreate", e);
    auto exec = structure<nvimgcodecExecutionParams_t>(NVIMGCODEC_STRUCTURE_TYPE_EXECUTION_PARAMS);
    exec.device_id = device_;
    // Parallelism comes from several lanes: one CPU thread inside each decoder.
    exec.max_num_cpu_threads = 1;
    exec.pre_init = 1;
    // Hardware engines first, then the CUDA (hybrid) JPEG decoder, then GPU-only (nvJPEG2000); a sample a
    // backend refuses falls to the next.
    static const nvimgcodecBackend_t backends[] = {
        {NVIMGCODEC_STRUCTURE_TYPE_BACKEND, sizeof(nvimgcodecBackend_t), nullptr, NVIMGCODEC_BACKEND_KIND_HW_GPU_ONLY,
         {NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS, sizeof(nvimgcodecBackendParams_t), nullptr, 1.0f,
          NVIMGCODEC_LOAD_HINT_POLICY_FIXED}},
        {NVIMGCODEC_STRUCTURE_TYPE_BACKEND, sizeof(nvimgcodecBackend_t), nullptr, NVIMGCODEC_BACKEND_KIND_HYBRID_CPU_GPU,
         {NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS, sizeof(nvimgcodecBackendParams_t), nullptr, 1.0f,
          NVIMGCODEC_LOAD_HINT_POLICY_FIXED}},
        {NVIMGCODEC_STRUCTURE_TYPE_BACKEND, sizeof(nvimgcodecBackend_t), nullptr, NVIMGCODEC_BACKEND_KIND_GPU_ONLY,
         {NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS, sizeof(nvimgcodecBackendParams_t), nullptr, 1.0f,
          NVIMGCODEC_LOAD_HINT_POLICY_FIXED}},
    };
    exec.num_backends = 3;
    exec.backends = backends;
    nvimgcodecStatus_t s = lib_.DecoderCreate(instance_, &decoder_, &exec, ":fancy_upsampling=1");
    if (s != NVIMGCODEC_STATUS_SUCCESS) {
      decoder_ = nullptr;
      return internal_error("nvimgcodecDecoderCreate failed: " + status_name(s));
    }
    return Status();
  }

  ~NvImageCodecDecoder() override {
    for (auto* cs : streams_) if (cs) lib_.CodeStreamDestroy(cs);
    for (auto* im : images_) if (im) lib_.ImageDestroy(im);
    if (decoder_) lib_.DecoderDestroy(decoder_);
    if (staging_) cudaFreeHost(staging_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // One call of kWarmUpTiles copies of warm_up_tile(), into scratch freed after: a decoder's first call is
  // several times slower than later ones (bench/RESULTS.md, "each decoder's slow first call"), so the lanes
  // make it when they start, not in a caller's first reads.
  void warm_up() override {
    static constexpr size_t kWarmUpTiles = 64;  // the lanes' largest call by default (gpu/tile_lanes.h max_batch)
    const std::vector<uint8_t>& tile = warm_up_tile();
    if (tile.empty() || cudaSetDevice(device_) != cudaSuccess) return;
    TileDesc desc;
    desc.compression = Compression::kJpeg;
    desc.color = ColorSpace::kYCbCr;
    desc.width = desc.height = 256;
    const size_t tile_bytes = size_t{256} * 256 * 3;
    void* scratch = nullptr;
    if (cudaMalloc(&scratch, tile_bytes * kWarmUpTiles) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    std::vector<DecodeRequest> requests(kWarmUpTiles);
    for (size_t i = 0; i < kWarmUpTiles; ++i) {
      requests[i].data = tile;
      requests[i].desc = &desc;
      requests[i].out = ImageView{static_cast<uint8_t*>(scratch) + i * tile_bytes, 256 * 3, 256, 256, 3,
                                  Device{DeviceType::kCuda, device_}};
    }
    std::vector<Status> statuses(kWarmUpTiles);
    decode_batch(requests, statuses);
    cudaFree(scratch);
  }

  const char* backend() const override { return "nvimgcodec"; }
  DeviceType output() const override { return DeviceType::kCuda; }
  bool needs_complete_streams() const override { return true; }
  bool window_decode() const override { return false; }
  Status can_decode(const TileDesc& desc) const override { return supports(desc); }

  void decode_batch(std::span<const DecodeRequest> requests, std::span<Status> statuses) override {
    const size_t n = requests.size();
    if (n == 0) return;
    cudaSetDevice(device_);
    // Code-stream and image handles are reused from batch to batch (nvImageCodec reuses a non-null handle).
    if (streams_.size() < n) {
      streams_.resize(n, nullptr);
      images_.resize(n, nullptr);
    }
    Status staged = stage(requests);
    std::vector<size_t> live;
    size_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const DecodeRequest& r = requests[i];
      const TileDesc& desc = *r.desc;
      const size_t size = r.data.size();
      const uint8_t* bytes = staging_ + offset;
      offset += size;
      if (!staged.ok()) {
        statuses[i] = staged;
        continue;
      }
      // The RGB rendering (an 8-bit RGB view), or the tile's own samples (codecs/decoder.h).
      const bool samples = !r.out.is_rgb8();
      Status refused = samples ? supports_samples(desc) : supports(desc);
      const int32_t channels = samples ? desc.samples_per_pixel : 3;
      const int32_t sample_bytes = samples ? desc.bits_per_sample / 8 : 1;
      if (refused.ok() && (r.x != 0 || r.y != 0 || r.out.width != desc.width || r.out.height != desc.height ||
                           r.out.channels != channels || r.out.sample_bytes != sample_bytes ||
                           r.out.device.type != DeviceType::kCuda)) {
        refused = internal_error("gpu: a request must be a whole tile in device memory");
      }
      if (!refused.ok()) {
        statuses[i] = refused;
        continue;
      }
      nvimgcodecStatus_t s = lib_.CodeStreamCreateFromHostMem(instance_, &streams_[i], bytes, size, nullptr);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = corrupt(std::string("gpu ") + compression_name(desc.compression) +
                              ": cannot parse the code stream: " + status_name(s));
        continue;
      }
      auto info = structure<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
      info.plane_info[0] = structure<nvimgcodecImagePlaneInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_PLANE_INFO);
      if (samples) {
        // Grey samples as stored. nvJPEG2000 rescales a stream whose precision (say 12 bits) is not its
        // container's unless the output states that precision: the stream's own is asked for.
        Status described = describe_samples(streams_[i], desc, info);
        if (!described.ok()) {
          statuses[i] = described;
          continue;
        }
      } else {
        // JPEG 2000 components are taken as they are (Aperio's YCbCr is converted below, as on the CPU).
        const bool raw = desc.compression == Compression::kJpeg2000;
        info.color_spec = raw ? NVIMGCODEC_COLORSPEC_UNCHANGED : NVIMGCODEC_COLORSPEC_SRGB;
        info.sample_format = raw ? NVIMGCODEC_SAMPLEFORMAT_I_UNCHANGED : NVIMGCODEC_SAMPLEFORMAT_I_RGB;
        info.plane_info[0].num_channels = 3;
        info.plane_info[0].sample_type = NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8;
      }
      info.chroma_subsampling = NVIMGCODEC_SAMPLING_NONE;
      info.orientation = structure<nvimgcodecOrientation_t>(NVIMGCODEC_STRUCTURE_TYPE_ORIENTATION);
      info.num_planes = 1;
      info.plane_info[0].width = static_cast<uint32_t>(desc.width);
      info.plane_info[0].height = static_cast<uint32_t>(desc.height);
      info.plane_info[0].row_stride = static_cast<size_t>(r.out.stride);
      info.buffer = r.out.data;
      info.buffer_kind = NVIMGCODEC_IMAGE_BUFFER_KIND_STRIDED_DEVICE;
      info.cuda_stream = stream_;
      s = lib_.ImageCreate(instance_, &images_[i], &info);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error("gpu: cannot describe the output: " + status_name(s));
        continue;
      }
      live.push_back(i);
    }
    if (live.empty()) return;
    run(requests, live, statuses);
    // nvImageCodec may fail every sample of a batch that holds a bad one (seen on the H200: a truncated
    // JPEG failed its good neighbours with processing status FAIL). Items that failed in a batch of several
    // are decoded again one by one, so that one bad item fails alone.
    if (live.size() > 1) {
      for (size_t i : live) {
        if (!statuses[i].ok()) run(requests, std::span<const size_t>(&i, 1), statuses);
      }
    }
  }

 private:
  // The output of a grey tile decoded into its own samples: one channel of the desc's sample type, at the
  // code stream's precision. Corrupt when the stream's components are not the desc's (a signed or deeper
  // stream, several components).
  Status describe_samples(nvimgcodecCodeStream_t stream, const TileDesc& desc, nvimgcodecImageInfo_t& info) const {
    const std::string codec = std::string("gpu ") + compression_name(desc.compression);
    auto stored = structure<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
    nvimgcodecStatus_t s = lib_.CodeStreamGetImageInfo(stream, &stored);
    if (s != NVIMGCODEC_STATUS_SUCCESS) return corrupt(codec + ": cannot read the code stream's header: " + status_name(s));
    const nvimgcodecImagePlaneInfo_t& plane = stored.plane_info[0];
    const int32_t components = static_cast<int32_t>(stored.num_planes > 1 ? stored.num_planes : plane.num_channels);
    const uint32_t bits = static_cast<uint32_t>(plane.sample_type) >> 8;  // the type's bit depth
    const uint32_t precision = plane.precision != 0 ? plane.precision : bits;
    const bool is_unsigned = plane.sample_type == NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8 ||
                             plane.sample_type == NVIMGCODEC_SAMPLE_DATA_TYPE_UINT16;
    if (components != 1 || !is_unsigned || precision > static_cast<uint32_t>(desc.bits_per_sample)) {
      return corrupt(codec + ": the code stream holds " + std::to_string(components) + " component(s) of " +
                     std::to_string(precision) + (is_unsigned ? "" : "-bit signed") +
                     " bits, the level's tiles one of " + std::to_string(desc.bits_per_sample));
    }
    info.color_spec = NVIMGCODEC_COLORSPEC_GRAY;
    info.sample_format = NVIMGCODEC_SAMPLEFORMAT_P_Y;
    info.plane_info[0].num_channels = 1;
    info.plane_info[0].sample_type =
        desc.bits_per_sample == 16 ? NVIMGCODEC_SAMPLE_DATA_TYPE_UINT16 : NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8;
    info.plane_info[0].precision = static_cast<uint8_t>(precision == static_cast<uint32_t>(desc.bits_per_sample) ? 0 : precision);
    return Status();
  }

  // Decodes the parsed items `live` (code streams and images made) in one nvImageCodec call and sets their
  // statuses; returns when the device work is complete.
  void run(std::span<const DecodeRequest> requests, std::span<const size_t> live, std::span<Status> statuses) {
    std::vector<nvimgcodecCodeStream_t> in;
    std::vector<nvimgcodecImage_t> out;
    for (size_t i : live) {
      in.push_back(streams_[i]);
      out.push_back(images_[i]);
    }
    // The params struct, the code streams, the staging and the images stay alive until the future resolves.
    params_ = structure<nvimgcodecDecodeParams_t>(NVIMGCODEC_STRUCTURE_TYPE_DECODE_PARAMS);
    nvimgcodecFuture_t future = nullptr;
    nvimgcodecStatus_t s = lib_.DecoderDecode(decoder_, in.data(), out.data(), static_cast<int>(in.size()), &params_, &future);
    std::vector<nvimgcodecProcessingStatus_t> processing(in.size(), NVIMGCODEC_PROCESSING_STATUS_FAIL);
    if (s == NVIMGCODEC_STATUS_SUCCESS && future) {
      lib_.FutureWaitForAll(future);
      size_t count = processing.size();
      lib_.FutureGetProcessingStatus(future, processing.data(), &count);
      lib_.FutureDestroy(future);
    } else if (future) {
      lib_.FutureDestroy(future);
    }
    // Aperio JPEG 2000 with YCbCr components (33003): converted in place, ordered after the decode.
    for (size_t k = 0; k < live.size(); ++k) {
      const DecodeRequest& r = requests[live[k]];
      if (s == NVIMGCODEC_STATUS_SUCCESS && processing[k] == NVIMGCODEC_PROCESSING_STATUS_SUCCESS &&
          r.desc->compression == Compression::kJpeg2000 && r.desc->color == ColorSpace::kYCbCr &&
          launch_ycbcr_to_rgb(r.out.data, static_cast<size_t>(r.out.stride), r.desc->width, r.desc->height, stream_) !=
              cudaSuccess) {
        processing[k] = NVIMGCODEC_PROCESSING_STATUS_FAIL;
      }
    }
    // nvJPEG2000's batches take milliseconds per tile: the lane sleeps through them (cuda_wait.h).
    bool slow = false;
    for (size_t i : live) slow = slow || requests[i].desc->compression != Compression::kJpeg;
    cudaError_t e = wait_for_stream(stream_, slow ? Wait::kLong : Wait::kShort);
    for (size_t k = 0; k < live.size(); ++k) {
      const size_t i = live[k];
      auto codec = [&] { return std::string("gpu ") + compression_name(requests[i].desc->compression); };
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error(codec() + ": decode failed: " + status_name(s));
      } else if (processing[k] != NVIMGCODEC_PROCESSING_STATUS_SUCCESS) {
        statuses[i] = corrupt(codec() + ": processing status " + std::to_string(processing[k]));
      } else if (e != cudaSuccess) {
        statuses[i] = cuda_error(codec(), e);
      } else {
        statuses[i] = Status();
      }
    }
  }

  // Copies every stream into the pinned staging buffer (DMA-able input lets the hardware engines fetch it
  // without a bounce).
  Status stage(std::span<const DecodeRequest> requests) {
    size_t total = 0;
    for (const DecodeRequest& r : requests) total += r.data.size();
    if (total > staging_capacity_) {
      if (staging_) cudaFreeHost(staging_);
      staging_ = nullptr;
      staging_capacity_ = 0;
      const size_t want = std::max(total + total / 2, size_t{4} << 20);
      cudaError_t e = cudaMallocHost(reinterpret_cast<void**>(&staging_), want);
      if (e != cudaSuccess) {
        staging_ = nullptr;
        return out_of_memory(std::string("cannot allocate pinned staging: ") + cudaGetErrorString(e));
      }
      staging_capacity_ = want;
    }
    uint8_t* at = staging_;
    for (const DecodeRequest& r : requests) {
      std::memcpy(at, r.data.data(), r.data.size());
      at += r.data.size();
    }
    return Status();
  }

  const NvImageCodecLibrary& lib_;
  nvimgcodecInstance_t instance_;
  int device_;
  cudaStream_t stream_ = nullptr;
  nvimgcodecDecoder_t decoder_ = nullptr;
  uint8_t* staging_ = nullptr;
  size_t staging_capacity_ = 0;
  std::vector<nvimgcodecCodeStream_t> streams_;
  std::vector<nvimgcodecImage_t> images_;
  nvimgcodecDecodeParams_t params_{};
};

struct ShutdownHooks {
  std::mutex mutex;
  std::vector<void (*)()> hooks;
};

ShutdownHooks& shutdown_hooks() {
  static auto* h = new internal::ForkSafe<ShutdownHooks>([] {
    auto* hooks = new ShutdownHooks();
    // Lanes (and their decoders) stop first, then the instance goes, all before the CUDA runtime unloads.
    // atexit handlers run in reverse order of registration: the CUDA runtime must register its teardown
    // before this handler (else nvImageCodec is torn down after CUDA and aborts at exit), so initialise it
    // first (harmless without a GPU: the call just fails).
    cudaFree(nullptr);
    cudaGetLastError();
    std::atexit([] {
      ShutdownHooks& s = shutdown_hooks();
      std::vector<void (*)()> run;
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        run.swap(s.hooks);
      }
      for (auto fn : run) fn();
      Runtime& r = runtime();
      auto lib = nvimgcodec_library();
      if (r.instance_ && lib.ok()) (*lib)->InstanceDestroy(r.instance_);
      r.instance_ = nullptr;
    });
    return hooks;
  });
  return h->get();
}

}  // namespace

void at_shutdown(void (*fn)()) {
  ShutdownHooks& s = shutdown_hooks();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.hooks.push_back(fn);
}

Status library_status() {
  auto lib = nvimgcodec_library();
  return lib.ok() ? Status() : lib.status();
}

Result<nvimgcodecInstance_t> process_instance() {
  TW_ASSIGN_OR_RETURN(const NvImageCodecLibrary* lib, nvimgcodec_library());
  shutdown_hooks();  // registers the exit handler before the first decoder or encoder exists
  return runtime().instance(*lib);
}

Status module_status(const char* prefix) {
  TW_RETURN_IF_ERROR(process_instance().status());
  return runtime().module_status(prefix);
}

Result<std::unique_ptr<Decoder>> create_decoder(int device) {
  TW_ASSIGN_OR_RETURN(const NvImageCodecLibrary* lib, nvimgcodec_library());
  // The threads the CUDA runtime and nvImageCodec start from here on carry this name, not the caller's.
  internal::ScopedThreadName name("tw-nvimgcodec");
  TW_ASSIGN_OR_RETURN(nvimgcodecInstance_t instance, process_instance());
  auto decoder = std::make_unique<NvImageCodecDecoder>(*lib, instance, device);
  TW_RETURN_IF_ERROR(decoder->init());
  return std::unique_ptr<Decoder>(std::move(decoder));
}

}  // namespace tilewise::codecs::nvimgcodec
