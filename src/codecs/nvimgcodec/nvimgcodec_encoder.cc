#include "codecs/nvimgcodec/nvimgcodec_encoder.h"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "codecs/nvimgcodec/nvimgcodec_library.h"
#include "util/settings.h"
#include "util/thread_name.h"

namespace tilewise::codecs::nvimgcodec {

namespace {

const char* codec_label(EncodeSettings::Codec codec) {
  switch (codec) {
    case EncodeSettings::Codec::kJpeg: return "gpu jpeg encode";
    case EncodeSettings::Codec::kJpeg2000: return "gpu jpeg2000 encode";
    case EncodeSettings::Codec::kJpeg2000Lossless: return "gpu jpeg2000-lossless encode";
  }
  return "gpu encode";
}

unsigned char* resize_output(void* ctx, size_t bytes) {
  auto* out = static_cast<std::vector<uint8_t>*>(ctx);
  out->resize(bytes);
  return out->data();
}

class NvImageCodecEncoder final : public Encoder {
 public:
  NvImageCodecEncoder(const NvImageCodecLibrary& lib, nvimgcodecInstance_t instance, int device, const EncodeSettings& settings)
      : lib_(lib), instance_(instance), device_(device), settings_(settings) {}

  ~NvImageCodecEncoder() override {
    for (auto* cs : streams_) if (cs) lib_.CodeStreamDestroy(cs);
    for (auto* im : images_) if (im) lib_.ImageDestroy(im);
    if (encoder_) lib_.EncoderDestroy(encoder_);
  }

  Status init() {
    const cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return internal_error(std::string("cudaSetDevice: ") + cudaGetErrorString(e));
    auto exec = structure<nvimgcodecExecutionParams_t>(NVIMGCODEC_STRUCTURE_TYPE_EXECUTION_PARAMS);
    exec.device_id = device_;
    // nvImageCodec's own threads: 1, 4 and 16 encoded the benchmark slide in about the same time
    // (bench/RESULTS.md, "H200: convert on the GPU"); 4 was the fastest.
    exec.max_num_cpu_threads = internal::settings().gpu_encode_threads;
    // The GPU encoders only (nvJPEG's CUDA encoder, nvJPEG2000): a CPU encoder standing in would make the
    // GPU path's numbers the CPU's.
    static const nvimgcodecBackend_t backends[] = {
        {NVIMGCODEC_STRUCTURE_TYPE_BACKEND, sizeof(nvimgcodecBackend_t), nullptr, NVIMGCODEC_BACKEND_KIND_GPU_ONLY,
         {NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS, sizeof(nvimgcodecBackendParams_t), nullptr, 1.0f,
          NVIMGCODEC_LOAD_HINT_POLICY_FIXED}},
        {NVIMGCODEC_STRUCTURE_TYPE_BACKEND, sizeof(nvimgcodecBackend_t), nullptr, NVIMGCODEC_BACKEND_KIND_HYBRID_CPU_GPU,
         {NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS, sizeof(nvimgcodecBackendParams_t), nullptr, 1.0f,
          NVIMGCODEC_LOAD_HINT_POLICY_FIXED}},
    };
    exec.num_backends = 2;
    exec.backends = backends;
    // An empty options string, not null: nvImageCodec 0.8 keeps the options as a std::string.
    const nvimgcodecStatus_t s = lib_.EncoderCreate(instance_, &encoder_, &exec, "");
    if (s != NVIMGCODEC_STATUS_SUCCESS) {
      encoder_ = nullptr;
      return unsupported(std::string(codec_label(settings_.codec)) + ": nvimgcodecEncoderCreate failed: " + status_name(s));
    }
    return Status();
  }

  void encode_batch(std::span<const DeviceTile> tiles, void* cuda_stream, std::span<std::vector<uint8_t>> out,
                    std::span<Status> statuses) override {
    const size_t n = tiles.size();
    if (n == 0) return;
    cudaSetDevice(device_);
    if (streams_.size() < n) {
      streams_.resize(n, nullptr);
      images_.resize(n, nullptr);
    }
    const bool jpeg = settings_.codec == EncodeSettings::Codec::kJpeg;
    std::vector<size_t> live;
    for (size_t i = 0; i < n; ++i) {
      const DeviceTile& t = tiles[i];
      auto info = structure<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
      info.color_spec = NVIMGCODEC_COLORSPEC_SRGB;
      info.chroma_subsampling = NVIMGCODEC_SAMPLING_NONE;
      info.sample_format = NVIMGCODEC_SAMPLEFORMAT_I_RGB;
      info.orientation = structure<nvimgcodecOrientation_t>(NVIMGCODEC_STRUCTURE_TYPE_ORIENTATION);
      info.num_planes = 1;
      info.plane_info[0] = structure<nvimgcodecImagePlaneInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_PLANE_INFO);
      info.plane_info[0].width = static_cast<uint32_t>(t.width);
      info.plane_info[0].height = static_cast<uint32_t>(t.height);
      info.plane_info[0].row_stride = static_cast<size_t>(t.stride);
      info.plane_info[0].num_channels = 3;
      info.plane_info[0].sample_type = NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8;
      info.buffer = const_cast<uint8_t*>(t.data);
      info.buffer_kind = NVIMGCODEC_IMAGE_BUFFER_KIND_STRIDED_DEVICE;
      info.cuda_stream = static_cast<cudaStream_t>(cuda_stream);
      nvimgcodecStatus_t s = lib_.ImageCreate(instance_, &images_[i], &info);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error(std::string(codec_label(settings_.codec)) + ": cannot describe the tile: " + status_name(s));
        continue;
      }
      // The stream's image: JPEG as YCbCr at the chosen subsampling; JPEG 2000 RGB with its colour transform.
      nvimgcodecImageInfo_t coded = info;
      std::strncpy(coded.codec_name, jpeg ? "jpeg" : "jpeg2k", NVIMGCODEC_MAX_CODEC_NAME_SIZE - 1);
      if (jpeg) {
        coded.color_spec = NVIMGCODEC_COLORSPEC_SYCC;
        coded.chroma_subsampling = settings_.subsample ? NVIMGCODEC_SAMPLING_420 : NVIMGCODEC_SAMPLING_444;
      }
      out[i].clear();
      s = lib_.CodeStreamCreateToHostMem(instance_, &streams_[i], &out[i], &resize_output, &coded);
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error(std::string(codec_label(settings_.codec)) + ": cannot make the output stream: " + status_name(s));
        continue;
      }
      live.push_back(i);
    }
    if (live.empty()) return;
    std::vector<nvimgcodecImage_t> in;
    std::vector<nvimgcodecCodeStream_t> to;
    for (size_t i : live) {
      in.push_back(images_[i]);
      to.push_back(streams_[i]);
    }
    auto params = structure<nvimgcodecEncodeParams_t>(NVIMGCODEC_STRUCTURE_TYPE_ENCODE_PARAMS);
    auto jpeg_params = structure<nvimgcodecJpegEncodeParams_t>(NVIMGCODEC_STRUCTURE_TYPE_JPEG_ENCODE_PARAMS);
    auto j2k_params = structure<nvimgcodecJpeg2kEncodeParams_t>(NVIMGCODEC_STRUCTURE_TYPE_JPEG2K_ENCODE_PARAMS);
    if (jpeg) {
      params.quality_type = NVIMGCODEC_QUALITY_TYPE_QUALITY;
      params.quality_value = static_cast<float>(settings_.quality);
      jpeg_params.optimized_huffman = 0;  // the standard tables, as libjpeg-turbo's default
      params.struct_next = &jpeg_params;
    } else {
      const bool lossless = settings_.codec == EncodeSettings::Codec::kJpeg2000Lossless;
      params.quality_type = lossless ? NVIMGCODEC_QUALITY_TYPE_LOSSLESS : NVIMGCODEC_QUALITY_TYPE_PSNR;
      params.quality_value = lossless ? 0.0f : 20.0f + static_cast<float>(settings_.quality) / 4.0f;
      j2k_params.stream_type = NVIMGCODEC_JPEG2K_STREAM_J2K;
      j2k_params.prog_order = NVIMGCODEC_JPEG2K_PROG_ORDER_LRCP;
      j2k_params.num_resolutions = 6;  // five decompositions, as OpenJPEG's default
      j2k_params.code_block_w = j2k_params.code_block_h = 64;
      j2k_params.mct_mode = 1;
      j2k_params.ht = 0;
      params.struct_next = &j2k_params;
    }
    nvimgcodecFuture_t future = nullptr;
    const nvimgcodecStatus_t s =
        lib_.EncoderEncode(encoder_, in.data(), to.data(), static_cast<int>(in.size()), &params, &future);
    std::vector<nvimgcodecProcessingStatus_t> processing(in.size(), NVIMGCODEC_PROCESSING_STATUS_FAIL);
    if (future) {
      if (s == NVIMGCODEC_STATUS_SUCCESS) {
        lib_.FutureWaitForAll(future);
        size_t count = processing.size();
        lib_.FutureGetProcessingStatus(future, processing.data(), &count);
      }
      lib_.FutureDestroy(future);
    }
    for (size_t k = 0; k < live.size(); ++k) {
      const size_t i = live[k];
      if (s != NVIMGCODEC_STATUS_SUCCESS) {
        statuses[i] = internal_error(std::string(codec_label(settings_.codec)) + " failed: " + status_name(s));
      } else if (processing[k] != NVIMGCODEC_PROCESSING_STATUS_SUCCESS || out[i].empty()) {
        statuses[i] = internal_error(std::string(codec_label(settings_.codec)) + ": processing status " + std::to_string(processing[k]));
      } else {
        statuses[i] = Status();
      }
    }
  }

 private:
  const NvImageCodecLibrary& lib_;
  nvimgcodecInstance_t instance_;
  int device_;
  EncodeSettings settings_;
  nvimgcodecEncoder_t encoder_ = nullptr;
  std::vector<nvimgcodecCodeStream_t> streams_;
  std::vector<nvimgcodecImage_t> images_;
};

}  // namespace

Result<std::unique_ptr<Encoder>> create_encoder(int device, const EncodeSettings& settings) {
  TW_ASSIGN_OR_RETURN(const NvImageCodecLibrary* lib, nvimgcodec_library());
  internal::ScopedThreadName name("tw-nvimgcodec");
  TW_ASSIGN_OR_RETURN(nvimgcodecInstance_t instance, process_instance());
  const Status module = module_status(settings.codec == EncodeSettings::Codec::kJpeg ? "libnvjpeg_ext.so" : "libnvjpeg2k_ext.so");
  if (!module.ok()) return unsupported(std::string(codec_label(settings.codec)) + ": " + module.message());
  auto encoder = std::make_unique<NvImageCodecEncoder>(*lib, instance, device, settings);
  TW_RETURN_IF_ERROR(encoder->init());
  return std::unique_ptr<Encoder>(std::move(encoder));
}

}  // namespace tilewise::codecs::nvimgcodec
