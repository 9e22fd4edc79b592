// A LoRA adapter with random (non-zero) A and B for a LoRA config's model, saved as a PEFT adapter
// folder: what a fine-tune would leave, for tests of what reads adapters.
#pragma once

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "models/transformer.h"
#include "peft/adapter.h"
#include "peft/lora_linear.h"

namespace tbtest {

// Writes the adapter of `config`'s model into `dir` and returns it under our names. `recipe`: what the
// config is validated as.
inline tb::peft::StateDict write_random_lora_adapter(const std::string& config, const std::string& dir, uint64_t seed,
                                                     const std::string& recipe = "lora_finetune_single_device") {
  tb::config::LoadOptions options;
  options.registry = &tb::components::builtin();
  options.recipe = recipe;
  const auto loaded = tb::config::load_file(config, options);
  if (!loaded.ok()) throw std::runtime_error(tb::config::format_diagnostics(loaded.diagnostics));
  auto model = tb::components::builtin().build<tb::models::TransformerDecoder>(loaded.config->at("model"));
  torch::manual_seed(seed);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters())
      if (tb::peft::is_adapter_parameter(p.key())) p.value().normal_(0.0, 0.05);
  }
  auto adapter = tb::peft::adapter_state_dict(*model);
  const auto loras = tb::peft::lora_modules(*model);
  if (loras.empty()) throw std::runtime_error(config + ": the model has no LoRA layers");
  tb::peft::AdapterConfig cfg;
  cfg.rank = loras.front().second->rank();
  cfg.alpha = loras.front().second->alpha();
  tb::peft::save_peft_adapter(dir, adapter, model->args(), cfg);
  return adapter;
}

// The bundled tiny/lora_single_device model's (rank 16, alpha 32).
inline tb::peft::StateDict write_random_tiny_lora_adapter(const std::string& dir, uint64_t seed) {
  return write_random_lora_adapter("configs/tiny/lora_single_device.yaml", dir, seed);
}

}  // namespace tbtest
