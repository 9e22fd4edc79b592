// Hugging Face Llama state dict <-> ours (torchtune's names and rotary layout).
//
// Names: model.embed_tokens.weight = tok_embeddings.weight, model.norm.weight = norm.scale,
// lm_head.weight = output.weight, and per layer N: self_attn.{q,k,v,o}_proj = attn.{q,k,v,output}_proj,
// mlp.{gate,down,up}_proj = mlp.{w1,w2,w3}, input_layernorm = sa_norm (.scale),
// post_attention_layernorm = mlp_norm (.scale).
//
// Rotary layout: Hugging Face rotates the pairs (x[i], x[i + D/2]) of each head ("rotate half"),
// torchtune the pairs (x[2i], x[2i+1]). Both use frequency i for pair i, so the q and k projection
// rows of each head are reordered: our row 2i+a is HF row a*D/2 + i (a in {0, 1}). Only rows move,
// so conversion is exact in every dtype and the two directions are inverse.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <torch/types.h>

#include "models/model_args.h"

namespace tb::checkpoint {

using StateDict = std::map<std::string, torch::Tensor>;

std::optional<std::string> hf_to_tune_name(const std::string& hf_name);  // nullopt: not a Llama weight
std::optional<std::string> tune_to_hf_name(const std::string& name);     // leading `_orig_mod.` ignored

// [num_heads * D, in] weights of q_proj/k_proj between the two rotary layouts (contiguous result).
torch::Tensor permute_hf_to_interleaved(const torch::Tensor& weight, int64_t num_heads);
torch::Tensor permute_interleaved_to_hf(const torch::Tensor& weight, int64_t num_heads);

// Renames and permutes a whole state dict. hf_to_tune drops `rotary_emb.inv_freq` buffers of old
// checkpoints and lm_head.weight when the embedding is tied; it throws std::runtime_error naming the
// key for any other unknown key and for q/k weights whose shape does not fit `args` (both shapes).
StateDict hf_to_tune(const StateDict& hf, const models::ModelArgs& args);
// Throws for a name that is not a base weight. Tied models carry no lm_head.
StateDict tune_to_hf(const StateDict& ours, const models::ModelArgs& args);

// A dtype's Hugging Face torch_dtype name: "float32", "bfloat16", "float16" (throws for other types).
std::string hf_torch_dtype_name(torch::ScalarType dtype);

// Natural order: digit runs compare by value, so layers.2 sorts before layers.10.
bool natural_key_less(const std::string& a, const std::string& b);

}  // namespace tb::checkpoint
