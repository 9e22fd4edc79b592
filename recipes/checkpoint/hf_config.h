// Hugging Face config.json <-> ModelArgs, for every family the decoder builds (llama, mistral, qwen2,
// qwen3, gemma, gemma2, gemma3_text, phi3). No LibTorch here: the window reads model folders through
// these functions too.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_args.h"

namespace tb::checkpoint {

// The architecture a config.json describes, exactly as its Hugging Face model computes it. Throws
// std::runtime_error naming `source` and the field for a missing/ill-typed field or what this decoder
// does not compute (another model_type, mixture-of-experts, vision towers, other rope scaling types,
// biases or activations the family does not have). Phi's longrope is computed with its short factors,
// so such a model reads at most original_max_position_embeddings tokens.
models::ModelArgs model_args_from_hf_config(const nlohmann::json& config, const std::string& source);

// <folder>/config.json for a folder, else `path` itself.
std::string config_file(const std::string& path);
// Reads <folder>/config.json (or the file itself when `path` names a file).
nlohmann::json read_hf_config(const std::string& path);
models::ModelArgs read_hf_model_args(const std::string& path);
// The same for config.json's text (a repo's, asked of the Hub before it is downloaded); `source` names it.
models::ModelArgs parse_hf_model_args(const std::string& text, const std::string& source);

// A config.json for `args` that Hugging Face transformers loads as its family's ...ForCausalLM.
// model_type: a checkpointer.model_type (check_model_type); torch_dtype: "float32", "bfloat16" or
// "float16" (hf_convert.h's hf_torch_dtype_name).
nlohmann::json hf_config_from_model_args(const models::ModelArgs& args, const std::string& model_type,
                                         const std::string& torch_dtype);

// The checkpointer.model_type that fits a config.json (torchtune's names): MISTRAL, QWEN2, QWEN3, GEMMA,
// GEMMA2, GEMMA3, PHI3_MINI or PHI4 (a phi3 config with a 100k+ vocabulary) by model_type; for Llama,
// LLAMA3 or LLAMA3_2 (tied embeddings) when its vocabulary is Llama 3's (128k tokens or more), else LLAMA2.
std::string hf_model_type(const nlohmann::json& config);

// Throws std::invalid_argument unless model_type is one of model_type_names().
void check_model_type(const std::string& model_type);
// torchtune's checkpointer.model_type names, and the family each names.
const std::vector<std::string>& model_type_names();
models::Family family_of_model_type(const std::string& model_type);

}  // namespace tb::checkpoint
