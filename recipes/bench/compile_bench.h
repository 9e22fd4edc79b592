// `tunebench-cli bench compile`: one config eager, then compiled, on the same batches in this process
// (bench_steps each, in a scratch folder removed afterwards), then their comparison and the machine's
// matrix-product limit (docs/contracts.md "Compile"). Torch-free interface: the CLI includes it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/step_bench.h"
#include "config/config.h"
#include "recipe.h"

namespace tb::bench {

// A scratch folder for a bench run's outputs, unique to this process.
std::string bench_scratch_dir();

// Turns the bench's overrides into the config; nullopt when it is invalid (the loader said why).
using BenchConfigLoader = std::function<std::optional<config::Config>(const std::vector<std::string>& overrides)>;

struct CompileBench {
  nlohmann::json eager, compiled;  // bench_steps' figures
  nlohmann::json line;             // compare_eager_and_compiled, with the machine's limit when it was measured
  std::string limit_error;         // why the limit could not be measured, else empty
};

// nullopt when a config did not load. `on_mode(compiled, figures)` after each mode. Throws
// std::runtime_error when a run fails.
std::optional<CompileBench> bench_compile(const RecipeInfo& recipe, const BenchConfigLoader& load,
                                          const std::vector<std::string>& overrides, const StepBenchOptions& options,
                                          const std::function<void(bool compiled, const nlohmann::json& figures)>& on_mode);

}  // namespace tb::bench
