// How a run is asked to stop or pause, and how it ended: what the CLI, the GUI and the training loop
// share. No LibTorch here.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace tb::training {

// Cross-thread requests to a running recipe; checked between optimizer steps.
struct RunControl {
  std::atomic<bool> stop{false};
  std::atomic<bool> pause{false};
  std::atomic<bool> save_on_stop{true};
  std::atomic<bool> held{false};  // set by the run while a pause holds it between steps
};

enum class RunStatus { Completed, Stopped, Failed };
const char* to_string(RunStatus s);

struct RunResult {
  RunStatus status = RunStatus::Completed;
  std::string message;  // the error for Failed
  int64_t steps_done = 0;
  double last_loss = 0;
  std::string last_checkpoint;  // path of the newest checkpoint written, empty if none
};

}  // namespace tb::training
