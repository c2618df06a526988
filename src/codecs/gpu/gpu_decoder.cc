#include "codecs/gpu/gpu_decoder.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "codecs/gpu/nvimgcodec_library.h"
#include "util/fork_safe.h"

namespace tilewise::codecs::gpu {

cudaError_t launch_fill_rgb(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                            cudaStream_t stream);

namespace {

Status cuda_error(const char* what, cudaError_t e) {
  return internal_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename T>
T structure(nvimgcodecStructureType_t type) {
  T s;
  std::memset(&s, 0, sizeof s);
  s.struct_type = type;
  s.struct_size = sizeof(T);
  return s;
}

// The process-wide nvImageCodec instance. Created on first use; destroyed by an atexit handler, together
// with every pooled decoder, before the CUDA runtime unloads.
class Runtime {
 public:
  Result<nvimgcodecInstance_t> instance(const NvImageCodecLibrary& lib) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (instance_) return instance_;
    auto info = structure<nvimgcodecInstanceCreateInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.load_builtin_modules = 1;
    info.load_extension_modules = 1;
    extensions_ = lib.directory + "/extensions";
    info.extension_modules_path = extensions_.c_str();
    nvimgcodecStatus_t s = lib.InstanceCreate(&instance_, &info);
    if (s != NVIMGCODEC_STATUS_SUCCESS) {
      instance_ = nullptr;
      return internal_error("nvimgcodecInstanceCreate failed: " + status_name(s));
    }
    return instance_;
  }
  std::mutex mutex_;
  nvimgcodecInstance_t instance_ = nullptr;
  std::string extensions_;
};

Runtime& runtime() {
  static auto* r = new internal::ForkSafe<Runtime>([] { return new Runtime(); });
  return r->get();
}

class NvImageCodecDecoder final : public GpuDecoder {
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
    exec.max_num_cpu_threads = 1;  // parallelism comes from several decoders, not from inside one
    exec.pre_init = 1;
    // Hardware engines first, then the CUDA (hybrid) decoder; samples a backend refuses fall to the next.
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
    if (stream_) cudaStreamDestroy(stream_);
  }

  void* stream() override { return stream_; }
  int device() const override { return device_; }

  void decode_batch(std::span<const DeviceTileRequest> requests, std::span<Status> statuses) override {
    const size_t n = requests.size();
    if (n == 0) return;
    cudaSetDevice(device_);
    // Code-stream and image handles are reused from batch to batch (nvImageCodec reuses a non-null handle).
    if (streams_.size() < n) {
      streams_.resize(n, nullptr);
      images_.resize(n, nullptr);
    }
    std::vector<size_t> live;
    for (size_t i = 0; i < n; ++i) {
      const DeviceTileRequest& r = requests[i];
      nvimgcodecStatus_t s = lib_.CodeStreamCreateFromHostMem(instance_, &streams_[i], r.stream.data(), r.stream.size(),
                                                              nullptr);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = corrupt("gpu jpeg: cannot parse the code stream: " + status_name(s));
        continue;
      }
      auto info = structure<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
      info.color_spec = NVIMGCODEC_COLORSPEC_SRGB;
      info.chroma_subsampling = NVIMGCODEC_SAMPLING_NONE;
      info.sample_format = NVIMGCODEC_SAMPLEFORMAT_I_RGB;
      info.orientation = structure<nvimgcodecOrientation_t>(NVIMGCODEC_STRUCTURE_TYPE_ORIENTATION);
      info.num_planes = 1;
      info.plane_info[0] = structure<nvimgcodecImagePlaneInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_PLANE_INFO);
      info.plane_info[0].width = static_cast<uint32_t>(r.width);
      info.plane_info[0].height = static_cast<uint32_t>(r.height);
      info.plane_info[0].row_stride = r.pitch;
      info.plane_info[0].num_channels = 3;
      info.plane_info[0].sample_type = NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8;
      info.buffer = r.out;
      info.buffer_kind = NVIMGCODEC_IMAGE_BUFFER_KIND_STRIDED_DEVICE;
      info.cuda_stream = stream_;
      s = lib_.ImageCreate(instance_, &images_[i], &info);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error("gpu jpeg: cannot describe the output: " + status_name(s));
        continue;
      }
      live.push_back(i);
    }
    if (live.empty()) return;
    std::vector<nvimgcodecCodeStream_t> in;
    std::vector<nvimgcodecImage_t> out;
    for (size_t i : live) {
      in.push_back(streams_[i]);
      out.push_back(images_[i]);
    }
    // The params struct, the code streams and the images stay alive until the future resolves.
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
    cudaError_t e = cudaStreamSynchronize(stream_);
    for (size_t k = 0; k < live.size(); ++k) {
      const size_t i = live[k];
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error("gpu jpeg: decode failed: " + status_name(s));
      } else if (processing[k] != NVIMGCODEC_PROCESSING_STATUS_SUCCESS) {
        statuses[i] = corrupt("gpu jpeg: processing status " + std::to_string(processing[k]));
      } else if (e != cudaSuccess) {
        statuses[i] = cuda_error("gpu jpeg", e);
      } else {
        statuses[i] = Status();
      }
    }
  }

 private:
  const NvImageCodecLibrary& lib_;
  nvimgcodecInstance_t instance_;
  int device_;
  cudaStream_t stream_ = nullptr;
  nvimgcodecDecoder_t decoder_ = nullptr;
  std::vector<nvimgcodecCodeStream_t> streams_;
  std::vector<nvimgcodecImage_t> images_;
  nvimgcodecDecodeParams_t params_{};
};

struct PoolState {
  std::mutex mutex;
  std::vector<std::unique_ptr<GpuDecoder>> free;
};

PoolState& pool() {
  static auto* p = new internal::ForkSafe<PoolState>([] {
    auto* state = new PoolState();
    // Decoders and the instance go before the CUDA runtime unloads.
    std::atexit([] {
      PoolState& s = pool();
      std::lock_guard<std::mutex> lock(s.mutex);
      s.free.clear();
      Runtime& r = runtime();
      auto lib = nvimgcodec_library();
      if (r.instance_ && lib.ok()) (*lib)->InstanceDestroy(r.instance_);
      r.instance_ = nullptr;
    });
    return state;
  });
  return p->get();
}

}  // namespace

bool GpuDecoder::can_decode(const TileDesc& desc) {
  // RGB-component JPEG (Aperio) would be taken for YCbCr by nvJPEG, and JPEG 2000 needs Aperio's colour
  // handling: both go to the CPU decoders for now.
  return desc.compression == Compression::kJpeg && desc.bits_per_sample == 8 &&
         (desc.color == ColorSpace::kYCbCr || desc.color == ColorSpace::kMinIsBlack) &&
         (desc.samples_per_pixel == 3 || desc.samples_per_pixel == 1);
}

Status device_status(int index) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return unsupported(std::string("no CUDA device is available (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  if (index < 0 || index >= count) {
    return invalid_argument("cuda:" + std::to_string(index) + " does not exist (" + std::to_string(count) + " devices)");
  }
  auto lib = nvimgcodec_library();
  if (!lib.ok()) return lib.status();
  return Status();
}

GpuDecoderPool::Lease::~Lease() {
  if (!decoder_) return;
  PoolState& s = pool();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.free.push_back(std::move(decoder_));
}

Result<GpuDecoderPool::Lease> GpuDecoderPool::acquire(int device) {
  TW_RETURN_IF_ERROR(device_status(device));
  PoolState& s = pool();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (size_t i = 0; i < s.free.size(); ++i) {
      if (s.free[i]->device() == device) {
        auto d = std::move(s.free[i]);
        s.free.erase(s.free.begin() + static_cast<long>(i));
        return Lease(std::move(d));
      }
    }
  }
  auto lib = nvimgcodec_library();
  TW_ASSIGN_OR_RETURN(nvimgcodecInstance_t instance, runtime().instance(**lib));
  auto decoder = std::make_unique<NvImageCodecDecoder>(**lib, instance, device);
  TW_RETURN_IF_ERROR(decoder->init());
  return Lease(std::move(decoder));
}

Result<void*> device_malloc(size_t bytes, int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return cuda_error("cudaSetDevice", e);
  void* p = nullptr;
  e = cudaMalloc(&p, bytes > 0 ? bytes : 1);
  if (e != cudaSuccess) return out_of_memory(std::string("cudaMalloc of ") + std::to_string(bytes) + " bytes: " + cudaGetErrorString(e));
  return p;
}

void device_free(void* p, int device) {
  if (!p) return;
  cudaSetDevice(device);
  cudaFree(p);  // at process exit the runtime may already be unloading: the error is irrelevant then
}

Status device_fill(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3], void* stream) {
  cudaError_t e = launch_fill_rgb(dst, pitch, width, height, rgb, static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? Status() : cuda_error("fill", e);
}

Status device_copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                      int32_t height, bool src_on_host, void* stream) {
  cudaError_t e = cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, static_cast<size_t>(width_bytes), static_cast<size_t>(height),
                                    src_on_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice,
                                    static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? Status() : cuda_error("copy", e);
}

Status device_synchronize(void* stream) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? Status() : cuda_error("synchronize", e);
}

}  // namespace tilewise::codecs::gpu
