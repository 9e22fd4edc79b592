// What a recipe is to the CLI and the GUI: a named function from a resolved config to a run,
// reporting through a MetricLogger and watching a RunControl for stop and pause requests.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "training/metrics.h"

namespace tb {

// Cross-thread requests to a running recipe; checked between optimizer steps.
struct RunControl {
  std::atomic<bool> stop{false};
  std::atomic<bool> pause{false};
  std::atomic<bool> save_on_stop{true};
};

enum class RunStatus { Completed, Stopped, Failed };
const char* to_string(RunStatus s);

struct RunResult {
  RunStatus status = RunStatus::Completed;
  std::string message;      // the error for Failed
  int64_t steps_done = 0;
  double last_loss = 0;
  std::string last_checkpoint;  // path of the newest checkpoint written, empty if none
};

using RecipeFn = std::function<RunResult(const config::Config& cfg, training::MetricLogger& logger, RunControl& control)>;

struct RecipeInfo {
  std::string name;         // full_finetune_single_device
  std::string description;
  RecipeFn run;
};

// Every recipe the product has, in a stable order.
const std::vector<RecipeInfo>& recipes();
const RecipeInfo* find_recipe(const std::string& name);

}  // namespace tb
