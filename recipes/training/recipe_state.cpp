#include "training/recipe_state.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.h"
#include "text/json_file.h"
#include "text/json_text.h"

namespace fs = std::filesystem;

namespace tb::training {

namespace {

// LibTorch's own file writer throws from a destructor when the disk fills (ENOSPC) or a size limit
// is hit (EFBIG), which ends the process. Its archive is written through this instead: the writer
// LibTorch calls never fails; the first error is kept and thrown once the archive is done.
class DeferredErrorFile {
 public:
  explicit DeferredErrorFile(const std::string& path) : file_(path) {}
  size_t write(const void* data, size_t n) {
    if (!error_.empty()) return n;
    try {
      file_.write(data, n);
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    return n;  // always "written": LibTorch must finish its archive without throwing
  }
  void finish() {
    if (!error_.empty()) throw std::runtime_error(error_);
    file_.commit();
  }

 private:
  checkpoint::AtomicFile file_;
  std::string error_;
};

}  // namespace

void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  DeferredErrorFile pt((fs::path(folder) / "recipe_state.pt").string());
  archive.save_to([&pt](const void* data, size_t n) { return pt.write(data, n); });
  pt.finish();
  const nlohmann::json counters = {
      {"global_step", state.global_step},
      {"epochs_run", state.epochs_run},
      {"cursor", {{"epoch", state.cursor.epoch}, {"batch_index", state.cursor.batch_index}}},
      {"seed", state.seed},
      {"total_steps", state.total_steps}};
  const std::string counters_text = text::json_text(counters, 2) + "\n";
  checkpoint::write_file_atomic((fs::path(folder) / "recipe_state.json").string(), counters_text);
}

RecipeState read_recipe_counters(const std::string& folder) {
  const fs::path path = fs::path(folder) / "recipe_state.json";
  if (!fs::exists(path)) throw std::runtime_error("cannot resume from " + folder + ": recipe_state.json missing");
  const auto j = text::read_json_file(path.string());
  try {
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
  torch::Tensor rng;
  // LibTorch's own errors name neither the file nor the folder: a damaged file is said as one.
  try {
    archive.load_from(pt_path.string());
    optimizer.load(archive);
    archive.read("rng_state", rng);
  } catch (const c10::Error& e) {
    throw std::runtime_error(pt_path.string() + " is damaged or not this run's optimizer state: " + e.what_without_backtrace());
  }
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the global generator
  generator.set_state(rng);
  return state;
}

}  // namespace tb::training
