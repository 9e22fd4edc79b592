// The checkpoint folders a run writes (DESIGN.md "Files a run writes"): each `step_N/` or `epoch_N/`
// is filled in a temporary folder, the manifest tunebench_checkpoint.json is written last, and the
// folder is renamed into place — so a checkpoint is either complete or absent.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::training {

inline constexpr const char* kManifestName = "tunebench_checkpoint.json";

// Creates `<output_dir>/<name>` atomically: `fill` writes the files into a temporary sibling folder,
// then the manifest is written there and the folder renamed over any older one of the same name.
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

}  // namespace tb::training
