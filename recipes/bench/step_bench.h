// `tunebench-cli bench step`: a recipe's real training step, timed in this process. The recipe runs
// as `run` would run it, for warm-up plus measured optimizer steps, and is stopped without saving;
// the figures are medians over the measured steps, so one noisy step does not move them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "recipe.h"

namespace tb::bench {

struct StepBenchOptions {
  int64_t steps = 10;   // measured optimizer steps
  int64_t warmup = 2;   // steps run first and left out of the medians
  std::function<void(int64_t done, int64_t total)> progress;  // after each step
  const std::atomic<bool>* interrupt = nullptr;  // set (Ctrl-C): the run stops after its step, bench_steps throws
  // When set, one more step runs after the measured ones (left out of the figures) under LibTorch's
  // profiler, and its Chrome trace (every ATen op, autograd node and fused kernel) is written here.
  std::string profile_path;
};

// The overrides that make a config a bench run: every step logged, memory tracked, one epoch of
// exactly warmup + steps steps, nothing resumed or saved along the way, outputs under output_dir.
std::vector<std::string> bench_overrides(const StepBenchOptions& options, const std::string& output_dir);

// Runs `recipe` on `cfg` (loaded with bench_overrides) and returns the figures: recipe, steps,
// warmup_steps, threads, tokens_per_step, first_step_s, median_step_s, tokens_per_s,
// peak_memory_gib (the highest step peak of tensor storage), process_peak_rss_gib, and the memory
// budget the recipe logged before training (weights, gradients, optimizer states, their sum as
// floor_gib, bytes per frozen parameter and per NF4 parameter), and the profile's path when one was written. Throws std::runtime_error when the run fails or
// ends before the last measured step.
nlohmann::json bench_steps(const RecipeInfo& recipe, const config::Config& cfg, const StepBenchOptions& options);

// `bench compile`'s line from the eager and the compiled bench_steps figures of one config: speeds
// (medians) and their ratio, first steps, the warm-up, the largest relative loss difference over
// every step both ran, and peak memories.
nlohmann::json compare_eager_and_compiled(const nlohmann::json& eager, const nlohmann::json& compiled);

// The median of `values` (the mean of the middle two for an even count); NaN when empty.
double median(std::vector<double> values);

}  // namespace tb::bench
