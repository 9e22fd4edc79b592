// Hugging Face state dicts <-> ours (torchtune's names and rotary layout), for every family we build.
//
// Names: model.embed_tokens.weight = tok_embeddings.weight, model.norm.weight = norm.scale,
// lm_head.weight = output.weight, and per layer N: self_attn.{q,k,v,o}_proj = attn.{q,k,v,output}_proj
// (q/k/v biases alike), self_attn.qkv_proj = attn.qkv_proj (Phi-3), self_attn.{q,k}_norm =
// attn.{q,k}_norm (.scale), mlp.{gate,down,up}_proj = mlp.{w1,w2,w3}, mlp.gate_up_proj = mlp.gate_up_proj,
// input_layernorm = sa_norm (.scale); then post_attention_layernorm = mlp_norm (.scale), or with
// sandwich norms (Gemma 2/3) post_attention_layernorm = sa_scale, pre_feedforward_layernorm = mlp_norm,
// post_feedforward_layernorm = mlp_scale.
//
// Rotary layout: Hugging Face rotates the pairs (x[i], x[i + R/2]) of the first R dims of each head
// ("rotate half"), torchtune the pairs (x[2i], x[2i+1]). Both use frequency i for pair i, so what meets
// a head's q or k dims is reordered: q/k projection rows and biases, q/k norm weights, the q and k blocks
// of a fused qkv_proj: our entry 2i+a is HF's a*R/2 + i (a in {0, 1}). Only rows move, so conversion is
// exact in every dtype and the two directions are inverse.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <torch/types.h>

#include "checkpoint/lazy_state.h"
#include "models/model_args.h"

namespace tb::checkpoint {

using StateDict = std::map<std::string, torch::Tensor>;

// nullopt: not a weight of any family's layout (`sandwich_norms`: Gemma 2/3's norm names).
std::optional<std::string> hf_to_tune_name(const std::string& hf_name, bool sandwich_norms = false);
std::optional<std::string> tune_to_hf_name(const std::string& name, bool sandwich_norms = false);  // `_orig_mod.` ignored

// [num_heads * D, ...] rows (or entries) of q_proj/k_proj between the two rotary layouts (contiguous
// result); rotary_dim: the dims of a head the rotary turns (0: all of them).
torch::Tensor permute_hf_to_interleaved(const torch::Tensor& weight, int64_t num_heads, int64_t rotary_dim = 0);
torch::Tensor permute_interleaved_to_hf(const torch::Tensor& weight, int64_t num_heads, int64_t rotary_dim = 0);

// One tensor (our name `ours`) moved into our rotary layout, or back to Hugging Face's; the tensors the
// rotary does not touch come back as they are. Throws std::runtime_error naming `shown` when a q/k
// tensor's shape does not fit `args`.
torch::Tensor to_rotary_layout(const std::string& ours, const std::string& shown, const torch::Tensor& t,
                               const models::ModelArgs& args, bool to_interleaved);

// Renames and permutes a whole state dict. hf_to_tune drops `rotary_emb.inv_freq` buffers of old
// checkpoints and lm_head.weight when the embedding is tied; it throws std::runtime_error naming the
// key for any other unknown key and for q/k tensors whose shape does not fit `args` (both shapes).
StateDict hf_to_tune(const StateDict& hf, const models::ModelArgs& args);
// Throws for a name that is not a base weight. Tied models carry no lm_head.
StateDict tune_to_hf(const StateDict& ours, const models::ModelArgs& args);
// The same with names now and each permutation when its tensor is made (checkpoint/lazy_state.h).
LazyStateDict tune_to_hf(const LazyStateDict& ours, const models::ModelArgs& args);

// A dtype's Hugging Face torch_dtype name: "float32", "bfloat16", "float16" (throws for other types).
std::string hf_torch_dtype_name(torch::ScalarType dtype);

// Natural order: digit runs compare by value, so layers.2 sorts before layers.10.
bool natural_key_less(const std::string& a, const std::string& b);

}  // namespace tb::checkpoint
