// The checkpoint folders a run writes (docs/contracts.md "Files a run writes"): each `step_N/` or `epoch_N/`
// is filled in a temporary folder, the manifest tunebench_checkpoint.json is written last, and the
// folder is renamed into place — so a checkpoint is either complete or absent.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.h"
#include "config/config.h"
#include "training/metrics.h"

namespace tb::training {

using checkpoint::kManifestName;

// Creates `<output_dir>/<name>` atomically: `fill` writes the files into a temporary sibling folder,
// then the manifest is written there, with the files it holds (checkpoint/checkpoint_files.h: `model_files`,
// `files`), and the folder renamed over any older one of the same name.
// On an exception nothing is left but the previous checkpoints. What a process killed mid-save left in
// output_dir (its temporary folder, an old checkpoint moved aside) is cleaned up first. Returns the final path.
std::string write_checkpoint_folder(const std::string& output_dir, const std::string& name,
                                    const std::function<void(const std::string& folder)>& fill,
                                    const nlohmann::json& manifest);

struct CheckpointInfo {
  std::string path;
  bool complete = false;   // has its manifest
  nlohmann::json manifest; // empty when incomplete or unreadable
  int64_t step = 0;        // from the manifest
};

// The checkpoint folders (step_*, epoch_*) of a run, complete or not, oldest step first.
std::vector<CheckpointInfo> list_checkpoints(const std::string& output_dir);
// The complete checkpoint with the highest step, if any.
std::optional<CheckpointInfo> newest_complete_checkpoint(const std::string& output_dir);
// The manifest of a checkpoint folder; nullopt when the folder is incomplete.
std::optional<nlohmann::json> read_manifest(const std::string& folder);

// Where resume_from_checkpoint resumes: checkpoint_dir when it is a checkpoint of ours (it has a
// manifest), else the newest complete checkpoint under output_dir. Throws when there is none.
std::string find_resume_folder(const std::optional<std::string>& checkpoint_dir, const std::string& output_dir);

// A checkpoint resumes only the run it belongs to: its manifest's recipe (single-device and distributed
// of one kind are the same run), model builder (and whether the base is quantized), LoRA rank and dtype
// must be this config's, its global batch (processes x batch_size, where it records one) this run's, and
// its recipe_state.json's step the manifest's. Throws std::runtime_error naming the folder and the
// first difference.
void check_resumable(const std::string& folder, const config::Config& cfg, const std::string& dtype_name,
                     int64_t world_size, int64_t batch_size);

// A fresh run's id: 16 random hex digits. The id a checkpoint records ("" for one written before ids).
std::string new_run_id();
std::string run_id_of(const std::string& checkpoint_folder);

// A run's claim on its output_dir, made before anything is written there (the harness, under the folder's
// lock): the folder's complete checkpoints must all be the run's own — none for a fresh run, the resumed
// run's for a resumed one. Another run's are deleted with overwrite_output_dir: true, else the run is
// refused (std::runtime_error naming them and the three ways on). A fresh run's metrics.jsonl starts
// empty: an earlier log (a run that saved nothing) is kept as metrics.<time>.jsonl, or deleted with
// overwrite_output_dir. Returns what it did, one line each, for the log.
std::vector<std::string> claim_output_dir(const config::Config& cfg, const std::string& metrics_file);

// A warning when the file system holding `dir` (or its nearest existing parent) has less free space than
// `bytes` ("output_dir /x has 1.2 GiB free; <what> takes about 2.4 GiB"); nullopt when it has enough or
// the space cannot be read.
std::optional<std::string> disk_space_warning(const std::string& dir, uint64_t bytes, const std::string& what);

// "2026-12-02T15:04:05Z"
std::string utc_timestamp();

// The manifest of a checkpoint folder (docs/contracts.md "Files a run writes"): step, epoch, loss (null when not finite), recipe,
// compile, dtype ("fp32", "bf16"), seed, run_id, time and the resolved config.
// `world_size` processes of `batch_size` samples each made every micro-batch.
nlohmann::json checkpoint_manifest(const config::Config& cfg, const std::string& recipe, int64_t world_size, int64_t step,
                                   int64_t epochs_run, double loss, const std::string& dtype, uint64_t seed,
                                   const std::string& run_id);

// A run's checkpoint folders: each written with write_checkpoint_folder, then announced to the logger
// as a {"event":"checkpoint"} line; remembers the newest.
class CheckpointWriter {
 public:
  CheckpointWriter(std::string output_dir, MetricLogger& logger) : output_dir_(std::move(output_dir)), logger_(logger) {}
  // Writes <output_dir>/<name> (see write_checkpoint_folder) for optimizer step `step`; returns its path.
  std::string write(const std::string& name, int64_t step, const nlohmann::json& manifest,
                    const std::function<void(const std::string& folder)>& fill);
  const std::string& last() const { return last_; }
  uint64_t last_bytes() const { return last_bytes_; }  // the size of the newest checkpoint written
  // checkpointer.keep_last_n_checkpoints: after each new checkpoint is complete, the oldest complete
  // ones beyond `n` are removed (0: keep all).
  // Only checkpoints of run `run_id` (their manifest's) are ever removed.
  void keep_last(int64_t n, std::string run_id) {
    keep_last_ = n;
    run_id_ = std::move(run_id);
  }

 private:
  void remove_old_checkpoints();

  std::string output_dir_;
  MetricLogger& logger_;
  std::string last_;
  uint64_t last_bytes_ = 0;
  int64_t keep_last_ = 0;
  std::string run_id_;
};

}  // namespace tb::training
