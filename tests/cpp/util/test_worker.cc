// A helper for worker_process_test: the request's head says what to do with the body.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "util/worker_process.h"

using namespace tilewise;

int main(int argc, char** argv) {
  if (argc != 2 || std::strncmp(argv[1], "--serve-fd=", 11) != 0) return 2;
  return internal::serve_requests(
      std::atoi(argv[1] + 11),
      [](std::span<const uint8_t> head, std::span<const uint8_t> body, std::vector<uint8_t>& out) -> Status {
        const std::string what(head.begin(), head.end());
        if (what == "echo") {
          out.assign(body.begin(), body.end());
          return Status::ok_status();
        }
        if (what == "reverse") {
          out.assign(body.rbegin(), body.rend());
          return Status::ok_status();
        }
        if (what == "fail") return corrupt("cannot: " + std::string(body.begin(), body.end()));
        if (what == "segv") std::raise(SIGSEGV);
        if (what == "abort") std::abort();
        if (what == "exit") std::_Exit(7);
        if (what == "hang") std::this_thread::sleep_for(std::chrono::seconds(30));
        if (what == "flood") {  // more than the caller has room for
          out.assign(body.size() + 1, 0);
          return Status::ok_status();
        }
        return invalid_argument("unknown request " + what);
      });
}
