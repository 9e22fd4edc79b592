#include "export/checkpoint_config.h"

#include <filesystem>
#include <stdexcept>

#include "checkpoint/checkpoint_files.h"
#include "components/builtin.h"
#include "config/overrides.h"
#include "config/registry.h"
#include "training/run_checkpoint.h"

namespace tb::exporting {

namespace fs = std::filesystem;

namespace {

// The manifest of a complete checkpoint that records its config.
nlohmann::json manifest_with_config(const fs::path& dir) {
  const auto manifest = training::read_manifest(dir.string());
  if (!manifest) {
    if (const auto damaged = checkpoint::damaged_manifest(dir.string())) throw std::runtime_error(*damaged);
    throw std::runtime_error(dir.string() + ": not a complete Tunebench checkpoint (no " +
                             training::kManifestName + ")");
  }
  if (!manifest->contains("config") || !(*manifest)["config"].is_string())
    throw std::runtime_error(dir.string() + "/" + training::kManifestName + ": holds no config");
  return *manifest;
}

config::LoadResult load_manifest_config(const fs::path& dir, const nlohmann::json& manifest,
                                        std::vector<std::string> overrides) {
  config::LoadOptions options;
  options.registry = &components::builtin();
  options.recipe = manifest.value("recipe", std::string());
  options.overrides = std::move(overrides);
  return config::load_text(manifest["config"].get<std::string>(), (dir / training::kManifestName).string(), options);
}

}  // namespace

config::LoadResult load_checkpoint_config(const std::string& checkpoint_dir, bool adapter,
                                          const std::vector<std::string>& overrides) {
  const fs::path dir = fs::absolute(checkpoint_dir).lexically_normal();
  const nlohmann::json manifest = manifest_with_config(dir);
  const bool adapter_files = fs::exists(dir / checkpoint::kAdapterFileName);
  // The files this folder holds, not those of the model its run started from (a Hub folder's
  // model.safetensors is saved as model-00001-of-00001.safetensors); none: an adapter alone.
  std::vector<std::string> weight_files;
  try {
    weight_files = checkpoint::resolve_checkpoint_files(dir.string(), {});
  } catch (const std::runtime_error& e) {
    if (!adapter_files)
      throw std::runtime_error(dir.string() + ": holds neither model weights nor a LoRA adapter (" + e.what() + ")");
  }
  const bool weights = !weight_files.empty();
  if (adapter && !adapter_files)
    throw std::runtime_error(dir.string() + ": holds no LoRA adapter (adapter_model.safetensors) to export");

  const std::string quoted = config::yaml_quoted(dir.string());
  std::vector<std::string> all;
  if (weights) {
    all.push_back("checkpointer.checkpoint_dir=" + quoted);
    all.push_back("checkpointer.checkpoint_files=" + config::yaml_flow_list(weight_files));
  }
  all.push_back(adapter || !weights ? "checkpointer.adapter_checkpoint=" + quoted
                                    : std::string("checkpointer.adapter_checkpoint=null"));
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_manifest_config(dir, manifest, all);
}

config::LoadResult load_checkpoint_base_config(const std::string& checkpoint_dir) {
  const fs::path dir = fs::absolute(checkpoint_dir).lexically_normal();
  return load_manifest_config(dir, manifest_with_config(dir), {"checkpointer.adapter_checkpoint=null"});
}

}  // namespace tb::exporting
