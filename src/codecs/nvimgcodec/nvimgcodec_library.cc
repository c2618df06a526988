#include "codecs/nvimgcodec/nvimgcodec_library.h"
#include "codecs/nvimgcodec/nvimgcodec_decoder.h"

#include <dlfcn.h>

#include <mutex>

namespace tilewise::codecs::nvimgcodec {

namespace {
std::mutex g_mutex;
std::string g_directory;
bool g_tried = false;
Result<const NvImageCodecLibrary*> g_result = unsupported("nvImageCodec was not loaded");
}  // namespace

void set_library_directory(const std::string& directory) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_directory = directory;
}

std::string status_name(nvimgcodecStatus_t status) {
  switch (status) {
    case NVIMGCODEC_STATUS_SUCCESS: return "success";
    case NVIMGCODEC_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVIMGCODEC_STATUS_BAD_CODESTREAM: return "bad code stream";
    case NVIMGCODEC_STATUS_CODESTREAM_UNSUPPORTED: return "code stream unsupported";
    case NVIMGCODEC_STATUS_ALLOCATOR_FAILURE: return "allocation failed";
    case NVIMGCODEC_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVIMGCODEC_STATUS_ARCH_MISMATCH: return "GPU architecture mismatch";
    case NVIMGCODEC_STATUS_MISSED_DEPENDENCIES: return "missing dependencies";
    default: return "status " + std::to_string(static_cast<int>(status));
  }
}

Result<const NvImageCodecLibrary*> nvimgcodec_library() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_tried) return g_result;
  g_tried = true;
  void* handle = nullptr;
  std::string where;
  std::string errors;
  for (const std::string& candidate : {g_directory.empty() ? std::string() : g_directory + "/libnvimgcodec.so.0",
                                       std::string("libnvimgcodec.so.0")}) {
    if (candidate.empty()) continue;
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      where = candidate;
      break;
    }
    const char* e = ::dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (e ? e : candidate);
  }
  if (!handle) {
    g_result = unsupported("nvImageCodec is not available (" + errors +
                           "): install nvidia-nvimgcodec-cu13>=0.8,<0.9, nvidia-nvjpeg and nvidia-nvjpeg2k-cu13");
    return g_result;
  }
  auto* lib = new NvImageCodecLibrary();  // lives for the process (dlclose at exit would race CUDA teardown)
  bool ok = true;
  auto load = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
    if (!fn) ok = false;
  };
  load(lib->GetProperties, "nvimgcodecGetProperties");
  load(lib->InstanceCreate, "nvimgcodecInstanceCreate");
  load(lib->InstanceDestroy, "nvimgcodecInstanceDestroy");
  load(lib->DecoderCreate, "nvimgcodecDecoderCreate");
  load(lib->DecoderDestroy, "nvimgcodecDecoderDestroy");
  load(lib->DecoderDecode, "nvimgcodecDecoderDecode");
  load(lib->CodeStreamCreateFromHostMem, "nvimgcodecCodeStreamCreateFromHostMem");
  load(lib->CodeStreamDestroy, "nvimgcodecCodeStreamDestroy");
  load(lib->CodeStreamGetImageInfo, "nvimgcodecCodeStreamGetImageInfo");
  load(lib->ImageCreate, "nvimgcodecImageCreate");
  load(lib->ImageDestroy, "nvimgcodecImageDestroy");
  load(lib->FutureWaitForAll, "nvimgcodecFutureWaitForAll");
  load(lib->FutureDestroy, "nvimgcodecFutureDestroy");
  load(lib->FutureGetProcessingStatus, "nvimgcodecFutureGetProcessingStatus");
  load(lib->EncoderCreate, "nvimgcodecEncoderCreate");
  load(lib->EncoderDestroy, "nvimgcodecEncoderDestroy");
  load(lib->EncoderEncode, "nvimgcodecEncoderEncode");
  load(lib->CodeStreamCreateToHostMem, "nvimgcodecCodeStreamCreateToHostMem");
  load(lib->ExtensionCreate, "nvimgcodecExtensionCreate");
  if (!ok) {
    g_result = unsupported(where + " lacks nvImageCodec 0.8 entry points");
    return g_result;
  }
  nvimgcodecProperties_t props{NVIMGCODEC_STRUCTURE_TYPE_PROPERTIES, sizeof(nvimgcodecProperties_t), nullptr, 0, 0};
  if (lib->GetProperties(&props) != NVIMGCODEC_STATUS_SUCCESS) {
    g_result = unsupported(where + ": nvimgcodecGetProperties failed");
    return g_result;
  }
  lib->version = props.version;
  const uint32_t major = props.version / 1000, minor = (props.version / 100) % 10;
  if (major != 0 || minor != 8) {
    g_result = unsupported("nvImageCodec " + std::to_string(major) + "." + std::to_string(minor) + " at " + where +
                           " is not supported: tilewise needs 0.8.x (pin nvidia-nvimgcodec-cu13>=0.8,<0.9)");
    return g_result;
  }
  // The folder the library was loaded from (its extensions/ sit beside it), also when the dynamic loader
  // found it by name (LD_LIBRARY_PATH, or a copy another module loaded already).
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(lib->GetProperties), &info) != 0 && info.dli_fname) where = info.dli_fname;
  const size_t slash = where.rfind('/');
  lib->directory = slash == std::string::npos ? std::string() : where.substr(0, slash);
  g_result = const_cast<const NvImageCodecLibrary*>(lib);
  return g_result;
}

}  // namespace tilewise::codecs::nvimgcodec
