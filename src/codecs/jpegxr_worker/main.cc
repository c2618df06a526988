// tilewise-jpegxr-worker: decodes JPEG XR streams for the library, which talks to it over the socket it is
// given (--serve-fd=N) and isolates jxrlib's crashes on corrupt streams in it (util/worker_process.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "codecs/jpegxr_worker/jxrlib_decode.h"
#include "util/worker_process.h"

using namespace tilewise;

int main(int argc, char** argv) {
  constexpr char kFlag[] = "--serve-fd=";
  if (argc != 2 || std::strncmp(argv[1], kFlag, sizeof kFlag - 1) != 0) {
    std::fprintf(stderr, "tilewise-jpegxr-worker: started by the tilewise library, not by hand\n");
    return 2;
  }
  const int fd = std::atoi(argv[1] + sizeof kFlag - 1);
  return internal::serve_requests(
      fd, [](std::span<const uint8_t> head, std::span<const uint8_t> body, std::vector<uint8_t>& out) -> Status {
        codecs::jpegxr_worker::Request r{};
        if (head.size() != sizeof r) return invalid_argument("jpeg-xr worker: malformed request");
        std::memcpy(&r, head.data(), sizeof r);
        if (r.width <= 0 || r.height <= 0 || (r.bytes_per_pixel != 1 && r.bytes_per_pixel != 2 && r.bytes_per_pixel != 3 && r.bytes_per_pixel != 4 &&
                                                  r.bytes_per_pixel != 6) ||
            int64_t{r.width} * r.height > (int64_t{1} << 28)) {
          return invalid_argument("jpeg-xr worker: a " + std::to_string(r.width) + "x" + std::to_string(r.height) +
                                  " subblock of " + std::to_string(r.bytes_per_pixel) + " bytes per pixel");
        }
        out.resize(static_cast<size_t>(r.width) * static_cast<size_t>(r.height) * static_cast<size_t>(r.bytes_per_pixel));
        TW_ASSIGN_OR_RETURN(size_t n, codecs::jpegxr_worker::jxrlib_decode(body, out, r.width, r.height,
                                                                         r.bytes_per_pixel));
        out.resize(n);
        return Status::ok_status();
      });
}
