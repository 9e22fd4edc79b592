// Which files of a checkpoint folder hold the model's weights, said in one place for everything that
// opens one: training (a start or a resume), eval, generate, chat, export, and the window's model box.
// Torch-free.
//
// A folder Tunebench wrote has a manifest (tunebench_checkpoint.json, written last) whose `model_files`
// lists its weight shards and `files` every file with its size; that list is the truth for the folder,
// whatever file names the config it was trained with gave for the model it started from (a Hub folder's
// `model.safetensors` becomes `model-00001-of-00001.safetensors` in our checkpoints). A Hugging Face
// folder names its shards in model.safetensors.index.json, or holds one model.safetensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::checkpoint {

inline constexpr const char* kManifestName = "tunebench_checkpoint.json";
inline constexpr const char* kIndexFileName = "model.safetensors.index.json";
inline constexpr const char* kAdapterFileName = "adapter_model.safetensors";

// The manifest of a Tunebench checkpoint folder; nullopt when it has none or it is not a JSON object.
std::optional<nlohmann::json> read_checkpoint_manifest(const std::string& folder);
// Why a folder whose manifest file is there has no readable manifest ("<folder>/tunebench_checkpoint.json
// is damaged: not valid JSON: ..."), so a damaged checkpoint is not called a missing one; nullopt when the
// manifest reads, or is absent.
std::optional<std::string> damaged_manifest(const std::string& folder);

// The weight shards a folder holds, found from the folder itself: the files its index names, else
// model.safetensors; empty when it has neither (an adapter-only checkpoint). Throws for an index that is
// not valid JSON or has no weight_map.
std::vector<std::string> model_files_in_folder(const std::string& dir);

// What the manifest says of a folder being written: `model_files` (as model_files_in_folder finds them)
// and `files` ({name: bytes} of every file in it, the manifest aside). Added to the manifest by the
// checkpoint writer once the files are complete.
nlohmann::json describe_checkpoint_files(const std::string& dir);

// The safetensors files to load from `dir`:
//   - a Tunebench checkpoint: its manifest's `model_files` (an older manifest without them: the folder's
//     own files), whatever `files` says;
//   - else `files` (relative to dir) when given, else model_files_in_folder.
// Throws std::runtime_error naming the folder for a missing folder or file, a folder with no weights (an
// adapter-only checkpoint), a file named outside the folder, and PyTorch pickle files (.bin/.pt/.pth).
std::vector<std::string> resolve_checkpoint_files(const std::string& dir, const std::vector<std::string>& files);

}  // namespace tb::checkpoint
