// Where checkpointer.adapter_checkpoint points: a PEFT adapter folder or its adapter_model.safetensors,
// relative to checkpoint_dir as in torchtune (when it does not exist as given). Empty when not set.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tb::peft {

inline std::string adapter_folder(const std::optional<std::string>& adapter_checkpoint,
                                  const std::optional<std::string>& checkpoint_dir) {
  if (!adapter_checkpoint || adapter_checkpoint->empty()) return {};
  std::filesystem::path p(*adapter_checkpoint);
  if (p.is_relative() && checkpoint_dir && !std::filesystem::exists(p)) p = std::filesystem::path(*checkpoint_dir) / p;
  if (p.extension() == ".safetensors") p = p.parent_path();
  return p.string();
}

}  // namespace tb::peft
