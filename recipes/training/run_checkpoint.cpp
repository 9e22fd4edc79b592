#include "training/run_checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "config/config.h"
#include "config/schema.h"
#include "hub/repo_path.h"
#include "text/json_text.h"
#include "text/strings.h"
#include "training/recipe_state.h"

namespace fs = std::filesystem;

namespace tb::training {
namespace {

void write_text_synced(const fs::path& path, const std::string& text) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  // The manifest marks completeness, so it must not reach the disk before the files it describes.
  ::sync();
}

// The pid that a `.tmp_<name>_<pid>` or `.old_<name>_<pid>` folder belongs to, when that process is
// gone; 0 otherwise (not such a folder, our own, or still running: perhaps another run saving here).
pid_t dead_owner(const std::string& folder_name) {
  if (folder_name.rfind(".tmp_", 0) != 0 && folder_name.rfind(".old_", 0) != 0) return 0;
  const size_t cut = folder_name.rfind('_');
  const std::string digits = folder_name.substr(cut + 1);
  if (cut < 5 || digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return 0;  // not a pid we wrote (and stol would throw on a longer run of digits)
  const pid_t pid = static_cast<pid_t>(std::stol(digits));
  if (pid <= 0 || pid == ::getpid()) return 0;
  return (::kill(pid, 0) != 0 && errno == ESRCH) ? pid : 0;
}

// What a process killed during a save left behind: its half-filled temporary folder is deleted, and
// an older checkpoint it had moved aside but not yet replaced goes back in place.
void recover_interrupted_saves(const fs::path& output_dir) {
  std::error_code ec;
  std::vector<fs::path> leftovers;
  for (const auto& entry : fs::directory_iterator(output_dir, ec))
    if (entry.is_directory(ec) && dead_owner(entry.path().filename().string()) != 0) leftovers.push_back(entry.path());
  for (const fs::path& folder : leftovers) {
    const std::string n = folder.filename().string();
    const fs::path original = output_dir / n.substr(5, n.rfind('_') - 5);
    if (n.rfind(".old_", 0) == 0 && !fs::exists(original, ec)) fs::rename(folder, original, ec);
    else fs::remove_all(folder, ec);
  }
}

}  // namespace

std::string write_checkpoint_folder(const std::string& output_dir, const std::string& name,
                                    const std::function<void(const std::string&)>& fill,
                                    const nlohmann::json& manifest) {
  const fs::path final_path = fs::path(output_dir) / name;
  const fs::path tmp = fs::path(output_dir) / (".tmp_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(output_dir);
  recover_interrupted_saves(output_dir);
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    // Absolute: a checkpointer joins a relative folder onto its own output_dir, which would put the
    // files of a relative output_dir (as the bundled configs use) one level too deep.
    fill(fs::absolute(tmp).string());
    nlohmann::json complete = manifest;
    complete.update(checkpoint::describe_checkpoint_files(tmp.string()));
    write_text_synced(tmp / kManifestName, text::json_text(complete, 2) + "\n");
    if (fs::exists(final_path)) {
      // Replacing a checkpoint of the same name: move the old one aside first so a crash between the
      // two renames leaves one complete copy.
      const fs::path old = fs::path(output_dir) / (".old_" + name + "_" + std::to_string(::getpid()));
      fs::remove_all(old);
      fs::rename(final_path, old);
      fs::rename(tmp, final_path);
      fs::remove_all(old);
    } else {
      fs::rename(tmp, final_path);
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  return final_path.string();
}

std::optional<nlohmann::json> read_manifest(const std::string& folder) { return checkpoint::read_checkpoint_manifest(folder); }

std::vector<CheckpointInfo> list_checkpoints(const std::string& output_dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(output_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || (name.rfind("step_", 0) != 0 && name.rfind("epoch_", 0) != 0)) continue;
    CheckpointInfo info;
    info.path = entry.path().string();
    if (auto manifest = read_manifest(info.path)) {
      info.complete = true;
      info.manifest = *manifest;
      info.step = manifest->value("step", int64_t{0});
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

std::optional<CheckpointInfo> newest_complete_checkpoint(const std::string& output_dir) {
  std::optional<CheckpointInfo> best;
  for (auto& info : list_checkpoints(output_dir))
    if (info.complete && (!best || info.step >= best->step)) best = info;
  return best;
}

namespace {

// full_finetune_single_device and full_finetune_distributed train the same thing: "full_finetune".
std::string recipe_kind(const std::string& recipe) {
  for (const char* suffix : {"_single_device", "_distributed"}) {
    const std::string s = suffix;
    if (recipe.size() > s.size() && text::ends_with(recipe, s)) return recipe.substr(0, recipe.size() - s.size());
  }
  return recipe;
}

}  // namespace

void check_resumable(const std::string& folder, const config::Config& cfg, const std::string& dtype_name,
                     int64_t world_size, int64_t batch_size) {
  const auto manifest = read_manifest(folder);
  if (!manifest) throw std::runtime_error("cannot resume from " + folder + ": it has no " + kManifestName);
  auto refuse = [&](const std::string& what) {
    throw std::runtime_error("cannot resume from " + folder + ": " + what);
  };
  const std::string recipe = manifest->value("recipe", std::string());
  if (!cfg.recipe.empty() && !recipe.empty() && recipe_kind(recipe) != recipe_kind(cfg.recipe))
    refuse("it was written by " + recipe + ", this run is " + cfg.recipe);
  const std::string dtype = manifest->value("dtype", std::string());
  if (!dtype.empty() && dtype != dtype_name) refuse("it was trained in " + dtype + ", this config says dtype " + dtype_name);
  // The model it was trained as, from the config the manifest records.
  if (manifest->contains("config") && (*manifest)["config"].is_string()) {
    YAML::Node then;
    try {
      then = YAML::Load((*manifest)["config"].get<std::string>());
    } catch (const YAML::Exception&) {
      refuse(std::string(kManifestName) + " holds a config that does not parse");
    }
    auto scalar = [](const YAML::Node& root, const char* section, const char* key) {
      const YAML::Node n = root.IsMap() && root[section] && root[section].IsMap() ? root[section][key] : YAML::Node();
      return n && n.IsScalar() ? n.Scalar() : std::string();
    };
    for (const char* key : {"_component_", "quantize_base", "lora_rank"}) {
      const std::string before = scalar(then, "model", key), now = scalar(cfg.root, "model", key);
      if (before != now)
        refuse("its model." + std::string(key) + " was " + (before.empty() ? "unset" : "'" + before + "'") +
               ", this config's is " + (now.empty() ? "unset" : "'" + now + "'"));
    }
  }
  // The data cursor counts global batches: it means the same place only at the same global batch.
  const int64_t then_world = manifest->value("world_size", int64_t{0}), then_batch = manifest->value("batch_size", int64_t{0});
  if (then_world > 0 && then_batch > 0 && then_world * then_batch != world_size * batch_size) {
    const int64_t global = then_world * then_batch;
    refuse("it was trained with " + std::to_string(then_world) + " process" + (then_world == 1 ? "" : "es") + " x batch_size " +
           std::to_string(then_batch) + " (" + std::to_string(global) + " samples per micro-batch), this run has " +
           std::to_string(world_size) + " x " + std::to_string(batch_size) +
           (global % world_size == 0 ? "; set batch_size: " + std::to_string(global / world_size) : "; use a number of processes that divides " + std::to_string(global)));
  }
  const int64_t step = manifest->value("step", int64_t{-1});
  const RecipeState counters = read_recipe_counters(folder);
  if (step >= 0 && counters.global_step != step)
    refuse("recipe_state.json says global_step " + std::to_string(counters.global_step) + ", its manifest step " +
           std::to_string(step) + " (the folder was edited or mixed with another)");
  if (counters.global_step < 0 || (counters.total_steps > 0 && counters.global_step > counters.total_steps))
    refuse("recipe_state.json's global_step " + std::to_string(counters.global_step) + " is outside 0.." +
           std::to_string(counters.total_steps));
}

std::string find_resume_folder(const std::optional<std::string>& checkpoint_dir, const std::string& output_dir) {
  if (checkpoint_dir && read_manifest(*checkpoint_dir)) return *checkpoint_dir;
  if (checkpoint_dir)
    if (const auto damaged = checkpoint::damaged_manifest(*checkpoint_dir)) throw std::runtime_error(*damaged);
  // A run killed between its two renames left its newest complete checkpoint as .old_<name>_<pid>.
  if (fs::is_directory(output_dir)) recover_interrupted_saves(output_dir);
  if (auto newest = newest_complete_checkpoint(output_dir)) return newest->path;
  throw std::runtime_error("resume_from_checkpoint is true but " + output_dir +
                           " holds no complete checkpoint (and checkpointer.checkpoint_dir is not one)");
}

std::string new_run_id() {
  std::random_device device;
  const uint64_t id = (uint64_t(device()) << 32) ^ device();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(id));
  return hex;
}

namespace {
std::string run_id_in(const nlohmann::json& manifest) {
  const auto it = manifest.find("run_id");
  return it != manifest.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

std::string run_id_of(const std::string& checkpoint_folder) {
  const auto manifest = read_manifest(checkpoint_folder);
  return manifest ? run_id_in(*manifest) : std::string();
}

std::vector<std::string> claim_output_dir(const config::Config& cfg, const std::string& metrics_file) {
  const std::string output_dir = config::setting_string(cfg, "output_dir");
  const bool overwrite = config::setting_bool(cfg, "overwrite_output_dir");
  std::vector<std::string> done;
  if (!fs::is_directory(output_dir)) return done;
  recover_interrupted_saves(output_dir);

  // The run this one continues, if any: the same folder find_resume_folder picks (its errors are the
  // recipe's to say: nothing is claimed then).
  const bool resuming = config::setting_bool(cfg, "resume_from_checkpoint");
  std::optional<std::string> checkpoint_dir;
  if (const YAML::Node dir = cfg.at("checkpointer.checkpoint_dir"); dir && dir.IsScalar() && !dir.IsNull())
    checkpoint_dir = hub::resolve_model_path(dir.Scalar(), false);
  std::string own_id, resumed;
  if (resuming) {
    try {
      resumed = find_resume_folder(checkpoint_dir, output_dir);
    } catch (const std::exception&) {
      return done;
    }
    own_id = run_id_of(resumed);
  }
  std::vector<std::string> foreign;
  for (const auto& c : list_checkpoints(output_dir)) {
    std::error_code ec;
    if (!c.complete || (!resumed.empty() && fs::equivalent(c.path, resumed, ec))) continue;
    if (!resuming || run_id_in(c.manifest) != own_id) foreign.push_back(c.path);
  }
  if (!foreign.empty() && !overwrite) {
    std::string names;
    for (size_t i = 0; i < foreign.size() && i < 4; ++i) names += (i ? ", " : "") + fs::path(foreign[i]).filename().string();
    if (foreign.size() > 4) names += ", … (" + std::to_string(foreign.size()) + " in all)";
    throw std::runtime_error("output_dir " + output_dir + " holds another run's checkpoints (" + names + "): " +
                             (resuming ? "they are not the resumed run's; " : "") +
                             "continue that run with resume_from_checkpoint=true, write this one elsewhere "
                             "(output_dir=...), or delete them and start afresh with overwrite_output_dir=true");
  }
  for (const auto& path : foreign) {
    std::error_code ec;
    if (checkpoint_dir && fs::equivalent(path, *checkpoint_dir, ec))
      throw std::runtime_error("output_dir " + output_dir + " holds " + path +
                               ", the checkpoint this run starts from: write this run elsewhere (output_dir=...)");
  }
  for (const auto& path : foreign) {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) throw std::runtime_error("overwrite_output_dir: cannot delete " + path + ": " + ec.message());
    done.push_back("overwrite_output_dir: deleted " + path + " (another run's checkpoint)");
  }
  // A fresh run's log starts empty.
  std::error_code ec;
  if (!resuming && fs::is_regular_file(metrics_file, ec) && fs::file_size(metrics_file, ec) > 0) {
    if (overwrite || !foreign.empty()) {
      fs::remove(metrics_file, ec);
      if (!ec) done.push_back("overwrite_output_dir: deleted the earlier run's " + metrics_file);
    } else {
      std::string stamp = utc_timestamp();
      stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
      fs::path kept = fs::path(metrics_file).parent_path() / ("metrics." + stamp + ".jsonl");
      for (int n = 2; fs::exists(kept, ec); ++n)  // never over a log kept before, in the same second
        kept = fs::path(metrics_file).parent_path() / ("metrics." + stamp + "-" + std::to_string(n) + ".jsonl");
      fs::rename(metrics_file, kept, ec);
      if (!ec) done.push_back("the earlier run's log (it saved no checkpoint) is kept as " + kept.string());
    }
    if (ec) throw std::runtime_error("cannot set the earlier run's log aside: " + metrics_file + ": " + ec.message());
  }
  return done;
}

namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

uint64_t folder_bytes(const fs::path& folder) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

}  // namespace

std::optional<std::string> disk_space_warning(const std::string& dir, uint64_t bytes, const std::string& what) {
  fs::path probe = fs::absolute(dir);
  std::error_code ec;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  const fs::space_info space = fs::space(probe, ec);
  if (ec || space.available >= bytes) return std::nullopt;
  return "output_dir " + dir + " has " + gib(space.available) + " free; " + what + " takes about " + gib(bytes) +
         ": free some space or the save will fail";
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json checkpoint_manifest(const config::Config& cfg, const std::string& recipe, int64_t world_size, int64_t step,
                                   int64_t epochs_run, double loss, const std::string& dtype, uint64_t seed,
                                   const std::string& run_id) {
  return {{"step", step},
          {"world_size", world_size},
          {"batch_size", config::setting_int(cfg, "batch_size")},
          {"epoch", epochs_run},
          {"loss", std::isfinite(loss) ? nlohmann::json(loss) : nlohmann::json()},
          {"recipe", recipe},
          {"compile", config::setting_bool(cfg, "compile")},
          {"dtype", dtype},
          {"seed", seed},
          {"run_id", run_id},
          {"time", utc_timestamp()},
          {"config", cfg.to_yaml()}};
}

std::string CheckpointWriter::write(const std::string& name, int64_t step, const nlohmann::json& manifest,
                                    const std::function<void(const std::string& folder)>& fill) {
  // The disk is checked against the last checkpoint's size: a save that cannot fit is said before it starts.
  if (last_bytes_ > 0)
    if (const auto warning = disk_space_warning(output_dir_, last_bytes_, "the next checkpoint (as the last one)"))
      logger_.log_event({{"event", "warning"}, {"message", *warning}});
  last_ = write_checkpoint_folder(output_dir_, name, fill, manifest);
  last_bytes_ = folder_bytes(last_);
  logger_.log_event({{"event", "checkpoint"}, {"path", last_}, {"step", step}});
  if (keep_last_ > 0) remove_old_checkpoints();
  return last_;
}

void CheckpointWriter::remove_old_checkpoints() {
  std::vector<CheckpointInfo> complete;
  for (auto& c : list_checkpoints(output_dir_))
    if (c.complete && run_id_in(c.manifest) == run_id_) complete.push_back(std::move(c));  // never another run's
  // Oldest step first; the one just written is never removed.
  for (size_t i = 0; i + static_cast<size_t>(keep_last_) < complete.size(); ++i) {
    std::error_code ec;
    if (std::filesystem::equivalent(complete[i].path, last_, ec)) continue;
    std::filesystem::remove_all(complete[i].path, ec);
    if (ec)
      logger_.log_event({{"event", "warning"}, {"message", "cannot remove old checkpoint " + complete[i].path + ": " + ec.message()}});
    else
      logger_.log_event({{"event", "checkpoint_removed"}, {"path", complete[i].path}});
  }
}

}  // namespace tb::training
