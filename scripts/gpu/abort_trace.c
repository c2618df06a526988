// A native backtrace of the thread that aborts or faults, for runs on the lent GPU machine: LD_PRELOAD'ed, it
// prints the thread's name and its frames as "object(+offset)" to stderr, then lets the signal take its
// default course. scripts/gpu/measure.sh builds it and resolves the frames with addr2line.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void on_fatal(int sig) {
  char name[17] = {0};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  static const char head[] = "\n== abort_trace: signal ";
  write(2, head, sizeof head - 1);
  const char* what = strsignal(sig);
  write(2, what, strlen(what));
  write(2, " on thread ", 11);
  write(2, name, strlen(name));
  write(2, "\n", 1);
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  write(2, "== end of abort_trace\n", 22);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc_s now, not inside the handler
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_fatal;
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGABRT, &action, NULL);
  sigaction(SIGSEGV, &action, NULL);
  sigaction(SIGBUS, &action, NULL);
}
