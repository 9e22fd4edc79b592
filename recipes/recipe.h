// What a recipe is to the CLI and the GUI: a named function from a resolved config to a run,
// reporting through a MetricLogger and watching a RunControl for stop and pause requests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "training/metrics.h"
#include "training/run_control.h"

namespace tb {

using RecipeFn = std::function<training::RunResult(const config::Config& cfg, training::MetricLogger& logger,
                                                   training::RunControl& control)>;

struct RecipeInfo {
  std::string name;  // full_finetune_single_device
  std::string description;
  RecipeFn run;
};

// Every recipe the product has, in a stable order.
const std::vector<RecipeInfo>& recipes();
const RecipeInfo* find_recipe(const std::string& name);

// full_finetune_distributed, lora_finetune_distributed: a recipe that runs as one rank of several processes.
bool is_distributed_recipe(const std::string& name);
// The data-parallel recipe a single-device one runs as on several processes (the name itself when it is one).
std::string distributed_counterpart(const std::string& name);

}  // namespace tb
