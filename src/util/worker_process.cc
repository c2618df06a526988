#include "util/worker_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace tilewise::internal {

namespace {

constexpr uint64_t kMaxMessageBytes = 1ull << 31;  // a request or reply part larger than this is refused

struct RequestHeader {
  uint64_t head_bytes;
  uint64_t body_bytes;
};
struct ReplyHeader {
  int32_t code;
  uint32_t message_bytes;
  uint64_t out_bytes;
};

// Writes all of `data`; false when the other end is gone. MSG_NOSIGNAL: a dead helper must not raise SIGPIPE
// in the reading process.
bool send_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads exactly n bytes before `deadline`. Returns "" on success, else why not.
std::string recv_all(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "did not answer in time";
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return std::string("failed: ") + std::strerror(errno);
    if (k == 0) return "ended";
    p += k;
    n -= static_cast<size_t>(k);
  }
  return "";
}

// A blocking read of exactly n bytes (the helper's side, which has no deadline). False at end of input.
bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* what = strsignal(sig);
    return "signal " + std::to_string(sig) + (what ? std::string(": ") + what : std::string());
  }
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

}  // namespace

WorkerProcessPool::WorkerProcessPool(std::string name, std::function<Result<std::string>()> locate, size_t max_idle,
                                     std::chrono::milliseconds timeout)
    : name_(std::move(name)), locate_(std::move(locate)), max_idle_(max_idle), timeout_(timeout) {}

WorkerProcessPool::~WorkerProcessPool() {
  for (Worker& w : idle_) discard(w);
}

uint64_t WorkerProcessPool::spawned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spawned_;
}

Result<WorkerProcessPool::Worker> WorkerProcessPool::spawn() {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    path = path_;
  }
  if (path.empty()) {
    TW_ASSIGN_OR_RETURN(path, locate_());
    std::lock_guard<std::mutex> lock(mu_);
    path_ = path;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return io_error(name_ + ": socketpair failed: " + std::strerror(errno));
  }
  // The helper's end becomes its fd 3 (dup2 clears close-on-exec; an end that already is 3 is moved first,
  // since dup2 onto itself would keep the flag).
  if (sv[1] == 3) {
    const int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
    ::close(sv[1]);
    if (moved < 0) {
      ::close(sv[0]);
      return io_error(name_ + ": cannot move a socket descriptor: " + std::strerror(errno));
    }
    sv[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // First the socket (its number may be 0-2 in a process that closed its standard streams), then the
  // standard streams on /dev/null: jxrlib prints diagnostics, and so would a sanitizer build's crash
  // report; the parent reports instead.
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);  // descriptors opened without close-on-exec
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // the caller's thread may block signals; the helper must not
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::string arg = "--serve-fd=3";
  char* argv[] = {path.data(), arg.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    return io_error(name_ + ": cannot start " + path + ": " + std::strerror(rc));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++spawned_;
  return Worker{pid, sv[0]};
}

int WorkerProcessPool::discard(Worker w) {
  ::close(w.fd);
  ::kill(w.pid, SIGKILL);  // a no-op on one that already ended
  int status = 0;
  while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

Result<size_t> WorkerProcessPool::exchange(const Worker& w, std::span<const uint8_t> head,
                                           std::span<const uint8_t> body, std::span<uint8_t> out, bool* sent,
                                           std::string* failure) {
  const RequestHeader rh{head.size(), body.size()};
  *sent = send_all(w.fd, &rh, sizeof rh) && send_all(w.fd, head.data(), head.size()) &&
          send_all(w.fd, body.data(), body.size());
  if (!*sent) *failure = "ended";
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  ReplyHeader reply{};
  if (failure->empty()) *failure = recv_all(w.fd, &reply, sizeof reply, deadline);
  if (failure->empty() && (reply.message_bytes > 65536 || reply.out_bytes > out.size())) {
    *failure = "sent a malformed reply";
  }
  std::string message(failure->empty() ? reply.message_bytes : 0, '\0');
  if (failure->empty()) *failure = recv_all(w.fd, message.data(), message.size(), deadline);
  if (failure->empty()) *failure = recv_all(w.fd, out.data(), reply.out_bytes, deadline);
  if (!failure->empty()) return internal_error(name_ + ": the decoder process " + *failure);
  if (reply.code != 0) return Status(static_cast<StatusCode>(reply.code), message);
  return static_cast<size_t>(reply.out_bytes);
}

Result<size_t> WorkerProcessPool::call(std::span<const uint8_t> head, std::span<const uint8_t> body,
                                       std::span<uint8_t> out) {
  for (int attempt = 0;; ++attempt) {
    Worker w;
    bool reused = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        w = idle_.back();
        idle_.pop_back();
        reused = true;
      }
    }
    if (!reused) {
      TW_ASSIGN_OR_RETURN(w, spawn());
    }
    bool sent = false;
    std::string failure;
    Result<size_t> r = exchange(w, head, body, out, &sent, &failure);
    if (failure.empty()) {  // an answer, success or the helper's own error on a stream it survived
      std::unique_lock<std::mutex> lock(mu_);
      if (idle_.size() < max_idle_) {
        idle_.push_back(w);
      } else {
        lock.unlock();
        discard(w);
      }
      return r;
    }
    if (!sent && reused && attempt == 0) {  // it ended before this request (killed from outside): once more
      discard(w);
      continue;
    }
    // It died on this input, or hung, or spoke nonsense: stopped, and the input called corrupt.
    const int status = discard(w);
    if (failure == "ended") {
      return corrupt(name_ + ": the decoder process died on this stream (" + describe_exit(status) + ")");
    }
    return corrupt(name_ + ": the decoder process " + failure + " on this stream and was stopped");
  }
}

int serve_requests(int fd, const WorkerHandler& handle) {
  std::vector<uint8_t> head, body, out;
  for (;;) {
    RequestHeader rh{};
    if (!read_all(fd, &rh, sizeof rh)) return 0;  // the reading process closed its end
    if (rh.head_bytes > kMaxMessageBytes || rh.body_bytes > kMaxMessageBytes) return 2;
    head.resize(rh.head_bytes);
    body.resize(rh.body_bytes);
    if (!read_all(fd, head.data(), head.size()) || !read_all(fd, body.data(), body.size())) return 0;
    out.clear();
    const Status s = handle(head, body, out);
    const std::string message = s.ok() ? std::string() : s.message().substr(0, 65536);
    const ReplyHeader reply{static_cast<int32_t>(s.code()), static_cast<uint32_t>(message.size()),
                            s.ok() ? out.size() : 0};
    if (!write_all(fd, &reply, sizeof reply) || !write_all(fd, message.data(), message.size()) ||
        !write_all(fd, out.data(), reply.out_bytes)) {
      return 0;
    }
  }
}

std::string directory_of_this_code() {
  Dl_info info{};
  std::string file;
  if (::dladdr(reinterpret_cast<void*>(&directory_of_this_code), &info) != 0 && info.dli_fname &&
      std::strchr(info.dli_fname, '/') != nullptr) {
    file = info.dli_fname;
  }
  char resolved[PATH_MAX];
  if (file.empty()) {  // the main executable: dladdr names it as it was started, or not at all
    const ssize_t n = ::readlink("/proc/self/exe", resolved, sizeof resolved - 1);
    if (n <= 0) return "";
    file.assign(resolved, static_cast<size_t>(n));
  } else if (::realpath(file.c_str(), resolved) != nullptr) {
    file = resolved;
  }
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash);
}

}  // namespace tilewise::internal
