#include "training/stop_signals.h"

#include <csignal>

#include <unistd.h>

namespace tb::training {

namespace {

// The run in scope, for the handler: a lock-free atomic store is async-signal-safe.
std::atomic<RunControl*> g_running{nullptr};
std::atomic<bool> g_received{false};
std::atomic<bool> g_at_once{false};

extern "C" void on_stop_signal(int) {
  if (g_at_once.load()) {
    const char waiting[] = "\ntunebench-cli: stopped while waiting for the other ranks (nothing to save yet)\n";
    ssize_t ignored = write(STDERR_FILENO, waiting, sizeof waiting - 1);
    (void)ignored;
    _exit(130);
  }
  const bool again = g_received.exchange(true);
  if (RunControl* control = g_running.load()) control->stop.store(true);
  const char first[] = "\ntunebench-cli: stopping after the current step, row or batch (again to stop at once)...\n";
  const char now[] = "\ntunebench-cli: stopped at once (the current step is not saved)\n";
  ssize_t ignored = again ? write(STDERR_FILENO, now, sizeof now - 1) : write(STDERR_FILENO, first, sizeof first - 1);
  (void)ignored;
  if (again) _exit(130);
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;  // a blocking call (c10d's rendezvous) continues instead of failing with EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a closed pipe (`| head`) becomes a write error, not a death
  std::signal(SIGXFSZ, SIG_IGN);  // a file size limit (ulimit -f) becomes EFBIG, reported, not a death
}

std::atomic<bool>& stop_signal_received() { return g_received; }

StopOnSignal::StopOnSignal(RunControl& control) : interruptible_(&control.stop), previous_(g_running.load()) {
  g_running.store(&control);
  if (g_received.load()) control.stop.store(true);  // a signal that came before the scope began
}

StopOnSignal::~StopOnSignal() { g_running.store(previous_); }

StopAtOnce::StopAtOnce() {
  g_at_once.store(true);
  if (g_received.load()) {  // a stop that came before the wait began
    const char waiting[] = "tunebench-cli: stopped before joining the other ranks\n";
    ssize_t ignored = write(STDERR_FILENO, waiting, sizeof waiting - 1);
    (void)ignored;
    _exit(130);
  }
}

StopAtOnce::~StopAtOnce() { g_at_once.store(false); }

}  // namespace tb::training
