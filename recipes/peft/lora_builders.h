// The LoRA / QLoRA variants of the decoder builders (`lora_*`, `qlora_*` components). The settings
// are torchtune's lora builder arguments.
#pragma once

#include <string>
#include <vector>

#include "models/model_args.h"
#include "models/transformer.h"

namespace tb::peft {

struct LoraSettings {
  std::vector<std::string> lora_attn_modules;  // subset of q_proj, k_proj, v_proj, output_proj
  bool apply_lora_to_mlp = false;
  bool apply_lora_to_output = false;
  int64_t lora_rank = 8;
  double lora_alpha = 16.0;
  double lora_dropout = 0.0;
  bool use_dora = false;
  bool quantize_base = false;  // QLoRA: NF4 base weights
};

// Throws std::invalid_argument for an attention module name outside q_proj/k_proj/v_proj/output_proj
// or a non-positive rank.
void validate_lora_settings(const LoraSettings& settings);

// Whether the LoRA settings adapt this projection.
bool lora_targets(const LoraSettings& settings, const models::ProjectionSite& site);

// The decoder with peft::LoRALinear at every targeted projection (plain linears elsewhere). With
// quantize_base the model is marked for NF4 (see peft/qlora.h): the recipe quantises the targeted
// base weights after loading the checkpoint into them. Throws std::invalid_argument for bad settings.
models::TransformerDecoder build_lora_decoder(const models::ModelArgs& args, const LoraSettings& settings);

}  // namespace tb::peft
