#include "training/recipe_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

namespace {

// A file written through our own writer and checked: LibTorch's file writer throws from a destructor
// when the disk fills (ENOSPC) or a size limit is hit (EFBIG), which ends the process. The writer
// given to LibTorch never fails; the first error is kept and reported once the archive is done.
class CheckedFile {
 public:
  explicit CheckedFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) error_ = errno;
  }
  ~CheckedFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    for (size_t left = n; left > 0 && error_ == 0;) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : ENOSPC;
        break;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    return n;  // always "written": LibTorch must finish its archive without throwing
  }
  // fsync and close; throws std::runtime_error naming the file and the system's reason.
  void finish() {
    if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
    if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    if (error_ != 0)
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(error_) +
                               (error_ == ENOSPC ? " (the disk is full)" : error_ == EFBIG ? " (a file size limit)" : ""));
  }

 private:
  std::string path_;
  int fd_ = -1;
  int error_ = 0;
};

}  // namespace

void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  CheckedFile pt((fs::path(folder) / "recipe_state.pt").string());
  archive.save_to([&pt](const void* data, size_t n) { return pt.write(data, n); });
  pt.finish();
  const nlohmann::json counters = {
      {"global_step", state.global_step},
      {"epochs_run", state.epochs_run},
      {"cursor", {{"epoch", state.cursor.epoch}, {"batch_index", state.cursor.batch_index}}},
      {"seed", state.seed},
      {"total_steps", state.total_steps}};
  const std::string counters_text = text::json_text(counters, 2) + "\n";
  CheckedFile json((fs::path(folder) / "recipe_state.json").string());
  json.write(counters_text.data(), counters_text.size());
  json.finish();
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
