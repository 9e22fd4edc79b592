// Ctrl-C and SIGTERM for a headless front end (the CLI). A first signal asks the run in scope to stop:
// training after the current step (and saves), a dataset being built between rows, eval between batches.
// A second ends the process at once with status 130, in any phase (checkpoints are renamed into place
// whole, so none is left looking complete). A closed pipe and a file size limit become write errors.
#pragma once

#include <atomic>

#include "config/interrupt.h"
#include "training/run_control.h"

namespace tb::training {

void install_stop_signal_handlers();

// Set by the first signal, whatever is in scope: the launcher passes it on to its workers.
std::atomic<bool>& stop_signal_received();

// `control` is what a signal stops while this lives (scopes nest: the innermost is stopped); the thread's
// long phases hear it (InterruptScope).
class StopOnSignal {
 public:
  explicit StopOnSignal(RunControl& control);
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  config::InterruptScope interruptible_;
  RunControl* previous_;
};

// While this lives a first signal ends the process at once (status 130): there is nothing to save and the
// thread is blocked where it cannot hear a stop (a worker waiting in the rendezvous for the other ranks).
class StopAtOnce {
 public:
  StopAtOnce();
  ~StopAtOnce();
  StopAtOnce(const StopAtOnce&) = delete;
  StopAtOnce& operator=(const StopAtOnce&) = delete;
};

}  // namespace tb::training
