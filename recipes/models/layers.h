// The building blocks of a Llama-family decoder: RMSNorm, rotary position embeddings (torchtune's
// interleaved-pair convention), grouped-query attention with injected projections, SwiGLU MLP.
// Every submodule is registered under torchtune's name so named_parameters() matches its state dict.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/model_args.h"

namespace tb::models {

// Root-mean-square norm over the last dimension, computed in fp32 whatever the input dtype:
// y = (x / sqrt(mean(x^2) + eps)).to(x.dtype) * scale.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor scale;
  double eps;
};
TORCH_MODULE(RMSNorm);

// Rotary inverse frequencies theta_i = base^(-2i/head_dim), i < head_dim/2, with the Llama 3.1
// scaling applied when given: wavelengths longer than old_context_len/low_freq_factor are divided by
// scale_factor, shorter than old_context_len/high_freq_factor kept, and the band between blended.
std::vector<double> rope_inverse_frequencies(int64_t head_dim, double base, const std::optional<RopeScaling>& scaling);

// cos/sin tables of the rotary angles pos * theta_i, fp32, [len, head_dim/2], grown on demand up to
// max_seq_len and kept per device. Not a registered buffer: model->to(kBFloat16) leaves it fp32.
class RotaryTables {
 public:
  RotaryTables(int64_t head_dim, double base, std::optional<RopeScaling> scaling, int64_t max_seq_len);
  // Rows 0..len-1, or the rows of `positions` (int64 of any shape, result shape positions.shape + [D/2]).
  std::pair<torch::Tensor, torch::Tensor> first(int64_t len, const torch::Device& device);
  std::pair<torch::Tensor, torch::Tensor> at(const torch::Tensor& positions);
  int64_t max_seq_len() const { return max_seq_len_; }

 private:
  void ensure(int64_t len, const torch::Device& device);
  std::vector<double> inv_freq_;
  int64_t max_seq_len_;
  int64_t cached_len_ = 0;
  torch::Tensor cos_, sin_;
};

// Rotates interleaved pairs (x[..., 2i], x[..., 2i+1]) of x [B, H, T, D] (any strides with a unit
// last stride) by the angles whose cos/sin are [T, D/2] or [B, T, D/2]. Computed in fp32, returned in
// x's dtype, contiguous [B, H, T, D].
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// softmax(q k^T * scale, blocked -> -inf) v with k/v heads shared by groups of q heads (q head h uses
// kv head h / (H / KV), as torchtune's and Hugging Face's repeat of kv heads). q [B, H, T, D],
// k and v [B, KV, L, D]; `blocked` bool, true where a query may NOT attend: [T, L] or [B, T, L].
// Returns [B, H, T, D]. No copy of k or v is made for the head repeat.
torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& blocked, double scale);

// Per-forward position state shared by all layers (computed once by the decoder).
struct PositionInfo {
  torch::Tensor cos, sin;    // [T, D/2] or [B, T, D/2], fp32
  torch::Tensor blocked;     // bool [T, L] or [B, T, L], true = may not attend
  torch::Tensor input_pos;   // 1-D [T] positions when the KV cache is in use, else undefined
  int64_t kv_len = 0;        // L: keys attended (T without cache)
};

struct AttentionDims {
  int64_t embed_dim = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
};

// Multi-head attention with grouped kv heads. The four projections are injected (any module whose
// forward takes and returns one Tensor: torch::nn::Linear, later LoRALinear or an NF4 linear).
struct MultiHeadAttentionImpl : torch::nn::Module {
  MultiHeadAttentionImpl(AttentionDims dims, torch::nn::AnyModule q_proj, torch::nn::AnyModule k_proj,
                         torch::nn::AnyModule v_proj, torch::nn::AnyModule output_proj);
  torch::Tensor forward(const torch::Tensor& x, const PositionInfo& pos);

  // A simple KV cache for generation: [batch, KV, max_len, D] per k and v, not part of the state.
  void setup_cache(int64_t batch, int64_t max_len, torch::ScalarType dtype, const torch::Device& device);
  void teardown_cache();
  bool caches_are_enabled() const { return k_cache_.defined(); }
  int64_t k_cache_batch() const { return k_cache_.defined() ? k_cache_.size(0) : 0; }

  AttentionDims dims;
  torch::nn::AnyModule q_proj, k_proj, v_proj, output_proj;

 private:
  torch::Tensor k_cache_, v_cache_;
};
TORCH_MODULE(MultiHeadAttention);

// SwiGLU: w2(silu(w1(x)) * w3(x)); w1 = gate, w3 = up, w2 = down.
struct FeedForwardImpl : torch::nn::Module {
  FeedForwardImpl(torch::nn::AnyModule w1, torch::nn::AnyModule w2, torch::nn::AnyModule w3);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::AnyModule w1, w2, w3;
};
TORCH_MODULE(FeedForward);

}  // namespace tb::models
