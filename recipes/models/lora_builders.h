// The LoRA / QLoRA variants of the decoder builders (`lora_*`, `qlora_*` components). The settings
// are torchtune's lora builder arguments; the LoRA subsystem fills build_lora_decoder with a
// LinearFactory that returns LoRALinear for the targeted projections.
#pragma once

#include <string>
#include <vector>

#include "models/model_args.h"
#include "models/transformer.h"

namespace tb::models {

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

// Not yet available: throws std::runtime_error until the LoRA recipe lands.
TransformerDecoder build_lora_decoder(const ModelArgs& args, const LoraSettings& settings);

}  // namespace tb::models
