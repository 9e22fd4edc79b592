// LoRA adapters as state dicts: which parameters are adapters, which train, PEFT's file format
// (adapter_model.safetensors + adapter_config.json, as Hugging Face PEFT saves and loads them),
// merging an adapter into its base weights, and the key checks of a LoRA model's checkpoint load.
//
// Names. Ours are torchtune's: layers.N.attn.q_proj.lora_a.weight, ..., output.lora_b.weight.
// PEFT's are "base_model.model." + the Hugging Face module + .lora_A/.lora_B.weight:
//   layers.N.attn.q_proj.lora_a.weight <-> base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight
//   mlp.w1/w2/w3 <-> mlp.gate_proj/down_proj/up_proj, output <-> lm_head (checkpoint/hf_convert.h).
// Rotary layout. Hugging Face permutes the output rows of q_proj/k_proj (P, see hf_convert.h). Since
// P (W + s B A) = P W + s (P B) A, an adapter follows its base by permuting lora_b's rows; lora_a
// stays as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "checkpoint/hf_convert.h"
#include "checkpoint/lazy_state.h"
#include "peft/lora_builders.h"
#include "models/model_args.h"

namespace tb::peft {

using StateDict = checkpoint::StateDict;

// True for LoRA parameters: a `lora_a.` or `lora_b.` name segment (a leading `_orig_mod.` is ignored).
bool is_adapter_parameter(const std::string& name);

// The adapter parameters of a module (detached, sharing storage), names without a leading `_orig_mod.`.
StateDict adapter_state_dict(const torch::nn::Module& module);

// Only the adapter parameters require grad; every other parameter is frozen.
void set_trainable_params(torch::nn::Module& module);

// Name conversion of single adapter tensors; nullopt when the name is not an adapter of a Llama
// projection (q/k/v/o, gate/down/up, lm_head).
std::optional<std::string> tune_to_peft_name(const std::string& ours);
std::optional<std::string> peft_to_tune_name(const std::string& peft);

// Whole adapters, renamed and with the q/k lora_b rows permuted between the rotary layouts. Both
// check every tensor against `args` and throw std::runtime_error naming the key (and `source`, the
// file it came from, when given) for an unknown name, a lora_a without its lora_b (or the reverse),
// or a shape that does not fit the model.
StateDict adapter_to_peft(const StateDict& ours, const models::ModelArgs& args);
StateDict adapter_from_peft(const StateDict& peft, const models::ModelArgs& args, const std::string& source = {});

// The fields of adapter_config.json that we read and write.
struct AdapterConfig {
  int64_t rank = 8;                         // "r"
  double alpha = 16.0;                      // "lora_alpha"
  double dropout = 0.0;                     // "lora_dropout"
  std::string base_model_name_or_path;      // empty <-> null
  std::vector<std::string> target_modules;  // Hugging Face names; filled by read_adapter_config only
};

constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";
constexpr const char* kAdapterConfigFile = "adapter_config.json";

// Writes <dir>/adapter_model.safetensors (PEFT names, tensors in their own dtype) and
// <dir>/adapter_config.json (r, lora_alpha, target_modules derived from the adapter's modules,
// peft_type LORA, task_type CAUSAL_LM, lora_dropout, bias none, base_model_name_or_path); each file
// atomically (temp file + rename). Creates `dir` when missing. cfg.target_modules is ignored.
void save_peft_adapter(const std::string& dir, const StateDict& adapter_ours, const models::ModelArgs& args,
                       const AdapterConfig& cfg);

// Reads <dir>/adapter_config.json. Throws std::runtime_error naming the file for a missing file, bad
// JSON, a missing or mistyped r/lora_alpha, and for what we cannot apply: peft_type other than LORA,
// use_dora, use_rslora, or a non-empty rank_pattern/alpha_pattern.
AdapterConfig read_adapter_config(const std::string& dir);

// Reads <dir>/adapter_model.safetensors into our names and rotary layout; checks the config's rank
// against every tensor. Errors name the file and the key (see adapter_from_peft).
StateDict load_peft_adapter(const std::string& dir, const models::ModelArgs& args);

// Copies an adapter (our names) into the model's LoRA parameters. Every adapter parameter of the
// model must be present with its shape and nothing else may be: otherwise std::runtime_error naming
// `source` and the keys.
void load_adapter_into(torch::nn::Module& model, const StateDict& adapter, const std::string& source);

// W' = W + (alpha / rank) * B @ A for every module with an adapter (in fp32, cast back to W's dtype);
// other base tensors pass unchanged, adapter tensors found in `base_ours` are dropped. Throws
// std::runtime_error when an adapter has no base weight, lacks its other half, or shapes disagree.
StateDict merge_lora(const StateDict& base_ours, const StateDict& adapter_ours, double alpha, int64_t rank);
// The same, each merged weight made only when a writer asks for it (a save holds one at a time).
checkpoint::LazyStateDict merge_lora(const checkpoint::LazyStateDict& base_ours, const StateDict& adapter_ours,
                                     double alpha, int64_t rank);

// Checks the keys of a LoRA model's checkpoint loads, as torchtune does. Base load: only adapter keys
// of the targeted modules may be missing, nothing may be unexpected. Adapter load (optional): base
// keys may be missing, adapter keys may not, nothing may be unexpected.
// Throws std::runtime_error listing every offending key.
void validate_missing_and_unexpected_for_lora(const LoraSettings& targets,
                                              const std::vector<std::string>& base_missing,
                                              const std::vector<std::string>& base_unexpected,
                                              const std::vector<std::string>& adapter_missing = {},
                                              const std::vector<std::string>& adapter_unexpected = {});

}  // namespace tb::peft
