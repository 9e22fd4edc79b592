// What a setup will need before anything is built (the window's memory line and its "will it fit?"
// question): weights, gradients and optimizer states from the architecture alone, by the same rules the
// builders and optimizers follow (peft::lora_targets, NF4's bytes per parameter, 8-bit AdamW's blocks),
// plus a rough activation term. Once a run has built its model, training/memory_budget.h says what it
// holds. Torch-free interface: the window includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/model_args.h"

namespace tb::training {

enum class Adapters { None, Lora, Qlora };  // full fine-tune, LoRA, QLoRA (NF4 bases)

// The LoRA builder arguments the estimate reads (torchtune's names under `model:`, its builders' defaults).
struct LoraTargets {
  std::vector<std::string> attn_modules = {"q_proj", "v_proj", "output_proj"};
  bool mlp = false;
  bool output = false;
  int64_t rank = 8;
};

// The optimizer's states: bitsandbytes' or torchao's 8-bit AdamW keep one byte per moment and element
// plus an fp32 absmax per block of 256, and fp32 moments below min_8bit_size (training/adamw8bit.h);
// anything else counts as AdamW. optimizer_in_bwd frees each gradient once its parameter has stepped, so
// the gradients count as the largest single one.
struct OptimizerStates {
  bool eight_bit = false;
  int64_t min_8bit_size = 4096;
  bool in_backward = false;
};

struct MemoryEstimate {
  int64_t total_params = 0;      // the base model's parameters
  int64_t trainable_params = 0;  // what the optimizer updates (all, or the adapters)
  int64_t adapter_params = 0;    // LoRA A and B matrices
  int64_t quantized_params = 0;  // base parameters stored as NF4 (QLoRA)
  double nf4_bytes_per_param = 0;  // what each of them takes (quant/nf4.h)
  double weight_bytes = 0;       // base weights (NF4 included) plus adapters
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  bool eight_bit_optimizer = false;
  bool gradients_one_at_a_time = false;
  double activation_bytes = 0;   // rough: what backward keeps, plus the fp32 logits and their gradient
  int64_t batch_size = 1;
  int64_t seq_len = 0;
  double total_bytes() const { return weight_bytes + gradient_bytes + optimizer_bytes + activation_bytes; }
};

// `dtype`: fp32 or bf16 (the compute dtype of weights, gradients and AdamW's states).
MemoryEstimate estimate_memory(const models::ModelArgs& args, Adapters adapters, const std::string& dtype,
                               const LoraTargets& lora, int64_t batch_size, int64_t seq_len,
                               const OptimizerStates& optimizer = {});

// What a setup's YAML (a config as written, not yet validated) says of the above; missing keys keep
// the defaults.
LoraTargets lora_targets_of(const YAML::Node& root);
OptimizerStates optimizer_states_of(const YAML::Node& root);

}  // namespace tb::training
