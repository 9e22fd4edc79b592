// The building blocks of a decoder: RMSNorm (Llama's, or Gemma's (1 + w) in fp32), rotary position
// embeddings (torchtune's interleaved-pair convention, over all or the first dims of a head), grouped-
// query attention with injected projections (optional q/k norms, soft-capping, a sliding window), and
// the gated MLP (SwiGLU or GeGLU). Every submodule is registered under torchtune's name so
// named_parameters() matches its state dict.
#pragma once

#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/model_args.h"

namespace tb::models {

// Root-mean-square norm over the last dimension, normalised in fp32 whatever the input dtype.
// Llama: y = (x / sqrt(mean(x^2) + eps)).to(x.dtype) * scale, scale starting at 1.
// offset (Gemma): y = ((x / sqrt(mean(x^2) + eps)) * (1 + scale)).to(x.dtype) in fp32, scale starting at 0.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps, bool offset = false);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor scale;
  double eps;
  bool offset;
};
TORCH_MODULE(RMSNorm);

// Rotary inverse frequencies theta_i = base^(-2i/rotary_dim), i < rotary_dim/2, with `scaling` applied:
// llama3 (wavelengths longer than old_context_len/low_freq_factor divided by scale_factor, shorter than
// old_context_len/high_freq_factor kept, the band between blended), linear (all divided by
// scale_factor) or longrope (theta_i divided by short_factor[i]).
std::vector<double> rope_inverse_frequencies(int64_t rotary_dim, double base, const std::optional<RopeScaling>& scaling);

// cos/sin tables of the rotary angles pos * theta_i, fp32, [len, rotary_dim/2] (longrope: times its
// attention factor), grown on demand up to max_seq_len and kept per device. Not a registered buffer:
// model->to(kBFloat16) leaves it fp32.
class RotaryTables {
 public:
  RotaryTables(int64_t rotary_dim, double base, std::optional<RopeScaling> scaling, int64_t max_seq_len);
  // Rows 0..len-1, or the rows of `positions` (int64 of any shape, result shape positions.shape + [D/2]).
  std::pair<torch::Tensor, torch::Tensor> first(int64_t len, const torch::Device& device);
  std::pair<torch::Tensor, torch::Tensor> at(const torch::Tensor& positions);
  int64_t max_seq_len() const { return max_seq_len_; }

 private:
  void ensure(int64_t len, const torch::Device& device);
  std::vector<double> inv_freq_;
  double attention_factor_ = 1.0;
  int64_t max_seq_len_;
  int64_t cached_len_ = 0;
  torch::Tensor cos_, sin_;
};

// Rotates interleaved pairs (x[..., 2i], x[..., 2i+1]) of the first R dims of x [B, H, T, D] (any
// strides with a unit last stride) by the angles whose cos/sin are [T, R/2] or [B, T, R/2]; the other
// D - R dims pass through. Computed in fp32, returned in x's dtype, contiguous [B, H, T, D].
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// softmax(cap(q k^T * scale), blocked -> -inf) v with k/v heads shared by groups of q heads (q head h
// uses kv head h / (H / KV), as torchtune's and Hugging Face's repeat of kv heads); cap(s) = softcap *
// tanh(s / softcap) when softcap > 0. q [B, H, T, D], k and v [B, KV, L, D]; `blocked` bool, true where
// a query may NOT attend: [T, L] or [B, T, L]. Returns [B, H, T, D]. No copy of k or v is made for the
// head repeat.
torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& blocked, double scale, double softcap = 0);

// Per-forward position state shared by all layers (computed once by the decoder).
struct PositionInfo {
  torch::Tensor cos, sin;    // [T, R/2] or [B, T, R/2], fp32
  torch::Tensor blocked;     // bool [T, L] or [B, T, L], true = may not attend
  torch::Tensor input_pos;   // 1-D [T] positions when the KV cache is in use, else undefined
  int64_t kv_len = 0;        // L: keys attended (T without cache)
  // Sliding layers: their mask (blocked beyond the window too), and their own rotary tables when they
  // have another base (Gemma 3); undefined when no layer slides / all share one rotary.
  torch::Tensor blocked_sliding;
  torch::Tensor cos_local, sin_local;
};

struct AttentionDims {
  int64_t embed_dim = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double scale = 0;       // what q k^T is multiplied by (0: head_dim^-0.5)
  double softcap = 0;     // scores soft-capped before the mask; 0: none
  bool sliding = false;   // this layer attends through the sliding-window mask (and local rotary)
  int64_t window = 0;     // the sliding window's length (keys a query sees, itself included)
};

// Multi-head attention with grouped kv heads. The projections are injected (any module whose forward
// takes and returns one Tensor: torch::nn::Linear, LoRALinear or an NF4 linear): q_proj, k_proj,
// v_proj, or one qkv_proj whose output rows are [q | k | v] (Phi-3), and output_proj. With q/k norms
// each head of q and k is normalised before the rotary.
struct MultiHeadAttentionImpl : torch::nn::Module {
  MultiHeadAttentionImpl(AttentionDims dims, torch::nn::AnyModule q_proj, torch::nn::AnyModule k_proj,
                         torch::nn::AnyModule v_proj, torch::nn::AnyModule output_proj);
  // The fused layout: one [q | k | v] projection.
  MultiHeadAttentionImpl(AttentionDims dims, torch::nn::AnyModule qkv_proj, torch::nn::AnyModule output_proj);
  // Registers q_norm and k_norm (RMSNorm over head_dim).
  void add_qk_norms(double eps, bool offset);
  torch::Tensor forward(const torch::Tensor& x, const PositionInfo& pos);
  // q, k, v as [B, T, heads, D] views of the projections of x.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> project_qkv(const torch::Tensor& x);
  bool fused() const { return !qkv_proj.is_empty(); }

  // A simple KV cache for generation: [batch, KV, max_len, D] per k and v, not part of the state.
  void setup_cache(int64_t batch, int64_t max_len, torch::ScalarType dtype, const torch::Device& device);
  void teardown_cache();
  bool caches_are_enabled() const { return k_cache_.defined(); }
  int64_t k_cache_batch() const { return k_cache_.defined() ? k_cache_.size(0) : 0; }

  AttentionDims dims;
  torch::nn::AnyModule q_proj, k_proj, v_proj, output_proj;
  torch::nn::AnyModule qkv_proj;  // set instead of q/k/v_proj in the fused layout
  RMSNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  torch::Tensor k_cache_, v_cache_;
};
TORCH_MODULE(MultiHeadAttention);

// The gated MLP: w2(act(w1(x)) * w3(x)); w1 = gate, w3 = up, w2 = down; act = silu (SwiGLU) or the
// tanh-approximated GELU (GeGLU). Fused layout (Phi-3): one gate_up_proj whose output rows are [gate | up].
struct FeedForwardImpl : torch::nn::Module {
  FeedForwardImpl(torch::nn::AnyModule w1, torch::nn::AnyModule w2, torch::nn::AnyModule w3,
                  Activation activation = Activation::silu);
  FeedForwardImpl(torch::nn::AnyModule gate_up_proj, torch::nn::AnyModule w2, Activation activation);
  torch::Tensor forward(const torch::Tensor& x);
  // The gate and up projections of x.
  std::pair<torch::Tensor, torch::Tensor> gate_and_up(const torch::Tensor& x);
  bool fused() const { return !gate_up_proj.is_empty(); }
  torch::nn::AnyModule w1, w2, w3;
  torch::nn::AnyModule gate_up_proj;  // set instead of w1 and w3 in the fused layout
  Activation activation;
};
TORCH_MODULE(FeedForward);

// act(gate) * up, the gated MLP's middle.
torch::Tensor gated_activation(const torch::Tensor& gate, const torch::Tensor& up, Activation activation);

}  // namespace tb::models
