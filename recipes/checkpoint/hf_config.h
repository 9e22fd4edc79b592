// Hugging Face config.json (LlamaConfig / MistralConfig) <-> ModelArgs. No LibTorch here: the window
// reads model folders through these functions too.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

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
// MistralForCausalLM for model_type MISTRAL). model_type: LLAMA2, LLAMA3, LLAMA3_2, MISTRAL;
// torch_dtype: "float32", "bfloat16" or "float16" (hf_convert.h's hf_torch_dtype_name).
nlohmann::json hf_config_from_model_args(const models::ModelArgs& args, const std::string& model_type,
                                         const std::string& torch_dtype);

// The checkpointer.model_type that fits a config.json: MISTRAL for model_type mistral; for Llama, LLAMA3 or
// LLAMA3_2 (tied embeddings) when its vocabulary is Llama 3's (128k tokens or more), else LLAMA2.
std::string hf_model_type(const nlohmann::json& config);

// Throws std::invalid_argument unless model_type is one of LLAMA2, LLAMA3, LLAMA3_2, MISTRAL.
void check_model_type(const std::string& model_type);

}  // namespace tb::checkpoint
