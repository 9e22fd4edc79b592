// Hugging Face config.json (LlamaConfig / MistralConfig) <-> ModelArgs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/model_args.h"

namespace tb::checkpoint {

// The architecture a config.json describes. Throws std::runtime_error naming `source` and the field
// for a missing/ill-typed field or an architecture this decoder cannot represent (biases, other
// rope scaling types, head_dim != hidden_size / num_attention_heads, an activation other than silu).
models::ModelArgs model_args_from_hf_config(const nlohmann::json& config, const std::string& source);

// Reads <folder>/config.json (or the file itself when `path` names a file).
nlohmann::json read_hf_config(const std::string& path);
models::ModelArgs read_hf_model_args(const std::string& path);

// A config.json for `args` that Hugging Face transformers loads as LlamaForCausalLM (or
// MistralForCausalLM for model_type MISTRAL). model_type: LLAMA2, LLAMA3, LLAMA3_2, MISTRAL.
nlohmann::json hf_config_from_model_args(const models::ModelArgs& args, const std::string& model_type,
                                         torch::ScalarType dtype);

// "float32", "bfloat16", "float16" (throws for other types).
std::string hf_torch_dtype_name(torch::ScalarType dtype);

// Throws std::invalid_argument unless model_type is one of LLAMA2, LLAMA3, LLAMA3_2, MISTRAL.
void check_model_type(const std::string& model_type);

}  // namespace tb::checkpoint
