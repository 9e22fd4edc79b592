// A stop asked for during a long phase that has no training steps to stop between (reading and
// tokenizing a dataset, eval's batches). The front end lends its stop flag to the thread for the scope of
// the work; the phase calls check_interrupt() between units of work, which throws Interrupted once the
// flag is set. Training steps keep their own check (RunControl::stop, which finishes the step and saves).
#pragma once

#include <atomic>
#include <stdexcept>

namespace tb::config {

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("stopped before the end (a stop was asked for)") {}
};

// The flag check_interrupt() reads on this thread while the scope lives (scopes nest; null: none).
class InterruptScope {
 public:
  explicit InterruptScope(const std::atomic<bool>* flag);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Throws Interrupted when this thread's flag is set.
void check_interrupt();

}  // namespace tb::config
