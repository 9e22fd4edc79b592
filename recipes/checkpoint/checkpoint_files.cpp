#include "checkpoint/checkpoint_files.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include "text/json_file.h"

namespace tb::checkpoint {

namespace fs = std::filesystem;

namespace {

bool is_pickle(const std::string& name) {
  const std::string ext = fs::path(name).extension().string();
  return ext == ".bin" || ext == ".pt" || ext == ".pth";
}

// A file of the folder is named within it: an index's `../../../../etc/passwd` was opened.
bool inside_folder(const std::string& name) {
  const fs::path p(name);
  if (p.empty() || p.is_absolute()) return false;
  for (const auto& part : p.lexically_normal())
    if (part == "..") return false;
  return true;
}

std::vector<std::string> check_present(const std::string& dir, std::vector<std::string> files, const std::string& who) {
  for (const auto& f : files) {
    if (!inside_folder(f))
      throw std::runtime_error("checkpoint file " + f + " is outside " + dir + who +
                               ": a checkpoint's files are named within its folder");
    if (is_pickle(f))
      throw std::runtime_error("checkpoint file " + f + " is a PyTorch pickle; tunebench reads safetensors only");
    if (!fs::exists(fs::path(dir) / f))
      throw std::runtime_error("checkpoint file " + (fs::path(dir) / f).string() + " does not exist" + who);
  }
  return files;
}

}  // namespace

std::optional<nlohmann::json> read_checkpoint_manifest(const std::string& folder) {
  auto j = text::try_read_json_file((fs::path(folder) / kManifestName).string());
  if (!j || !j->is_object()) return std::nullopt;
  return j;
}

std::optional<std::string> damaged_manifest(const std::string& folder) {
  const fs::path file = fs::path(folder) / kManifestName;
  std::error_code ec;
  if (!fs::exists(file, ec) || read_checkpoint_manifest(folder)) return std::nullopt;
  try {
    text::read_json_file(file.string());
  } catch (const std::exception& e) {
    return file.string() + " is damaged: " + std::string(e.what()).substr(file.string().size() + 2);
  }
  return file.string() + " is damaged: not a JSON object";
}

std::vector<std::string> model_files_in_folder(const std::string& dir) {
  const fs::path index = fs::path(dir) / kIndexFileName;
  if (fs::exists(index)) {
    const nlohmann::json j = text::read_json_file(index.string());
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw std::runtime_error(index.string() + ": no 'weight_map' object");
    std::set<std::string> unique;
    for (const auto& [key, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw std::runtime_error(index.string() + ": weight_map entry of '" + key + "' is not a file name");
      unique.insert(file.get<std::string>());
    }
    return {unique.begin(), unique.end()};
  }
  if (fs::exists(fs::path(dir) / "model.safetensors")) return {"model.safetensors"};
  return {};
}

nlohmann::json describe_checkpoint_files(const std::string& dir) {
  nlohmann::json files = nlohmann::json::object();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    if (name == kManifestName) continue;
    files[name] = static_cast<uint64_t>(entry.file_size(ec));
  }
  return {{"model_files", model_files_in_folder(dir)}, {"files", files}};
}

std::vector<std::string> resolve_checkpoint_files(const std::string& dir, const std::vector<std::string>& files) {
  if (!fs::is_directory(dir)) throw std::runtime_error("checkpoint_dir " + dir + " is not a folder");
  if (const auto manifest = read_checkpoint_manifest(dir)) {
    // The folder says what it holds; the config's file names were those of the model the run started from.
    std::vector<std::string> listed;
    if (manifest->contains("model_files") && (*manifest)["model_files"].is_array()) {
      for (const auto& f : (*manifest)["model_files"])
        if (f.is_string()) listed.push_back(f.get<std::string>());
    } else {
      listed = model_files_in_folder(dir);  // a manifest written before it listed them
    }
    if (listed.empty())
      throw std::runtime_error("checkpoint_dir " + dir + " is a checkpoint without model weights (a LoRA adapter " +
                               "alone): point checkpoint_dir at its base model and adapter_checkpoint at it");
    return check_present(dir, listed, " (its " + std::string(kManifestName) + " lists it)");
  }
  if (!files.empty()) return check_present(dir, files, "");
  auto found = model_files_in_folder(dir);
  if (found.empty())
    throw std::runtime_error("checkpoint_dir " + dir + " has neither model.safetensors nor " + kIndexFileName +
                             "; name the files in checkpoint_files");
  return check_present(dir, found, "");
}

}  // namespace tb::checkpoint
