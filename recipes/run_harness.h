// How a front end runs a recipe, the same for the CLI's `run` and the window's training thread: the output
// folder's lock before the log opens (one run per output_dir), the config's metric loggers plus the front
// end's own, the recipe, an `end` event for a recipe that throws, the log flushed. A worker of a
// multi-process run other than rank 0 neither locks the folder nor writes the log: it says only its
// errors, on stderr (rank 0 says the rest).
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "recipe.h"
#include "training/metrics.h"
#include "training/run_control.h"

namespace tb {

struct RunHarness {
  int rank = 0;
  std::vector<std::shared_ptr<training::MetricLogger>> loggers;  // the front end's, after the config's
  bool print_progress = false;  // rank 0: a StdoutLogger when the config's loggers have none (the CLI)
};

// Never throws: a folder that is in use, a log that cannot be opened or a recipe that fails all come back
// as a Failed result with the reason.
training::RunResult run_with_harness(const RecipeInfo& recipe, const config::Config& cfg, training::RunControl& control,
                                     const RunHarness& harness);

}  // namespace tb
