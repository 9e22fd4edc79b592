#include "training/recipe_state.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <nlohmann/json.hpp>

#include "text/json_text.h"

namespace fs = std::filesystem;

namespace tb::training {

void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  archive.save_to((fs::path(folder) / "recipe_state.pt").string());
  const nlohmann::json counters = {
      {"global_step", state.global_step},
      {"epochs_run", state.epochs_run},
      {"cursor", {{"epoch", state.cursor.epoch}, {"batch_index", state.cursor.batch_index}}},
      {"seed", state.seed},
      {"total_steps", state.total_steps}};
  std::ofstream((fs::path(folder) / "recipe_state.json").string()) << text::json_text(counters, 2) << "\n";
}

RecipeState read_recipe_counters(const std::string& folder) {
  const fs::path path = fs::path(folder) / "recipe_state.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot resume from " + folder + ": recipe_state.json missing");
  try {
    const auto j = nlohmann::json::parse(in);
    RecipeState state;
    state.global_step = j.at("global_step").get<int64_t>();
    state.epochs_run = j.at("epochs_run").get<int64_t>();
    state.cursor = {j.at("cursor").at("epoch").get<int64_t>(), j.at("cursor").at("batch_index").get<int64_t>()};
    state.seed = j.at("seed").get<uint64_t>();
    state.total_steps = j.at("total_steps").get<int64_t>();
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not a recipe state: " + e.what());
  }
}

RecipeState load_recipe_state(const std::string& folder, torch::optim::Optimizer& optimizer) {
  const fs::path pt_path = fs::path(folder) / "recipe_state.pt";
  if (!fs::exists(pt_path)) throw std::runtime_error("cannot resume from " + folder + ": recipe_state.pt missing");
  RecipeState state = read_recipe_counters(folder);
  torch::serialize::InputArchive archive;
  archive.load_from(pt_path.string());
  optimizer.load(archive);
  torch::Tensor rng;
  archive.read("rng_state", rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the global generator
  generator.set_state(rng);
  return state;
}

}  // namespace tb::training
