// recipe_state.json and recipe_state.pt: everything besides the weights that a resumed run needs to
// continue exactly where its checkpoint was written.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataloader.h"

namespace torch::optim {
class Optimizer;
}

namespace tb::training {

struct RecipeState {
  int64_t global_step = 0;  // optimizer steps done
  int64_t epochs_run = 0;   // completed epochs
  data::DataCursor cursor;  // next batch to read
  uint64_t seed = 0;        // the run's seed (picked at random when the config said seed: null)
  int64_t total_steps = 0;
};

// Writes recipe_state.json (the counters) and recipe_state.pt (optimizer state, RNG state) into folder.
void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer);
// Reads recipe_state.json only (what a resume needs before it builds anything, e.g. the seed); throws
// naming the file when it is missing or unreadable.
RecipeState read_recipe_counters(const std::string& folder);
// Reads both back: the optimizer state into `optimizer`, the RNG state into the global CPU generator.
RecipeState load_recipe_state(const std::string& folder, torch::optim::Optimizer& optimizer);

}  // namespace tb::training
