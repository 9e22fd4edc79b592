#include "recipe.h"

#include "text/strings.h"

namespace tb {

using training::MetricLogger;
using training::RunControl;
using training::RunResult;

RunResult run_full_finetune_single_device(const config::Config&, MetricLogger&, RunControl&);
RunResult run_lora_finetune_single_device(const config::Config&, MetricLogger&, RunControl&);
RunResult run_full_finetune_distributed(const config::Config&, MetricLogger&, RunControl&);
RunResult run_lora_finetune_distributed(const config::Config&, MetricLogger&, RunControl&);

const std::vector<RecipeInfo>& recipes() {
  static const std::vector<RecipeInfo> all = {
      {"full_finetune_single_device", "full fine-tune: every weight trains", run_full_finetune_single_device},
      {"lora_finetune_single_device", "LoRA / QLoRA: the base stays frozen, low-rank adapters train",
       run_lora_finetune_single_device},
      {"full_finetune_distributed", "full fine-tune, data parallel over processes (--nproc-per-node, torchrun)",
       run_full_finetune_distributed},
      {"lora_finetune_distributed", "LoRA / QLoRA, data parallel over processes (--nproc-per-node, torchrun)",
       run_lora_finetune_distributed},
  };
  return all;
}

const RecipeInfo* find_recipe(const std::string& name) {
  for (const auto& r : recipes())
    if (r.name == name) return &r;
  return nullptr;
}

bool is_distributed_recipe(const std::string& name) {
  return name.size() > 12 && text::ends_with(name, "_distributed");
}

std::string distributed_counterpart(const std::string& name) {
  const std::string single = "_single_device";
  if (!text::ends_with(name, single)) return name;
  return name.substr(0, name.size() - single.size()) + "_distributed";
}

}  // namespace tb
