// The decoder: token embedding (times sqrt(dim) for Gemma), N x (RMSNorm -> attention [-> RMSNorm] ->
// residual, RMSNorm -> gated MLP [-> RMSNorm] -> residual), final RMSNorm, output projection (or the
// embedding matrix when tied, soft-capped for Gemma 2). ModelArgs says which family's variant of each
// piece runs (models/model_args.h).
//
// Product type of every model component in the registry (`_component_: torchtune.models...`):
//   tb::models::TransformerDecoder   (a TORCH_MODULE holder, i.e. a shared_ptr to TransformerDecoderImpl;
//                                     its args() tells the architecture it was built with)
// so recipes do `registry.build<tb::models::TransformerDecoder>(cfg.at("model"))`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/layers.h"
#include "models/model_args.h"

namespace tb::models {

// Where a linear projection sits; a LinearFactory decides what module to create for it.
struct ProjectionSite {
  std::string name;       // q_proj, k_proj, v_proj, output_proj, w1 (gate), w2 (down), w3 (up), output;
                          // in the fused layout qkv_proj and gate_up_proj instead of q/k/v and w1/w3
  int64_t layer = -1;     // decoder layer index; -1 for the model's output projection
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = false;      // the projection adds a bias (Qwen2's q, k, v)
};
// Returns any module whose forward(const Tensor&) -> Tensor maps [..., in] to [..., out] and whose
// base weight (and bias) is registered as `weight` (`bias`), so checkpoints load: torch::nn::Linear,
// LoRALinear, ...
using LinearFactory = std::function<torch::nn::AnyModule(const ProjectionSite&)>;
// The default: a torch::nn::Linear, with a bias where the site has one.
torch::nn::AnyModule make_plain_linear(const ProjectionSite& site);
// q_proj, k_proj, v_proj, qkv_proj, output_proj, w1, w2, w3, gate_up_proj, output.
const std::vector<std::string>& projection_names();
// A decoder layer's projections, in the order the factory sees them: q, k, v (or qkv_proj), output_proj,
// then w1, w2, w3 (or gate_up_proj, w2). The model's own output projection is `output_site`.
std::vector<ProjectionSite> layer_projection_sites(const ModelArgs& args, int64_t layer);
ProjectionSite output_site(const ModelArgs& args);
// Bytes per element in which a factory stores a site's weight when that is not the build dtype's (QLoRA's
// NF4 bases, made empty and filled as they load), else 0: the memory check before a build counts it so.
using SiteStorage = std::function<double(const ProjectionSite&)>;

// torchtune's names: sa_norm before attention, mlp_norm before the MLP, and with sandwich norms
// (Gemma 2, 3) sa_scale after attention and mlp_scale after the MLP.
struct TransformerSelfAttentionLayerImpl : torch::nn::Module {
  TransformerSelfAttentionLayerImpl(MultiHeadAttention attn, FeedForward mlp, int64_t dim, double norm_eps,
                                    bool norm_offset = false, bool sandwich_norms = false);
  torch::Tensor forward(const torch::Tensor& x, const PositionInfo& pos);
  RMSNorm sa_norm;
  MultiHeadAttention attn;
  RMSNorm mlp_norm;
  FeedForward mlp;
  RMSNorm sa_scale{nullptr}, mlp_scale{nullptr};  // sandwich norms only
};
TORCH_MODULE(TransformerSelfAttentionLayer);

class TransformerDecoderImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderImpl(const ModelArgs& args, const LinearFactory& factory = make_plain_linear);

  // tokens int64 [B, T] -> logits [B, T, vocab] in the model's dtype.
  // input_pos: positions of the tokens, [T] or [B, T] (default 0..T-1, or the next cache slots when
  //            the KV cache is set up; then it must be [T]).
  // mask:      bool, true where a query MAY attend a key (torchtune's convention), [T, L] or [B, T, L];
  //            default causal.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& input_pos = {},
                        const torch::Tensor& mask = {});
  // The token embeddings [B, T, dim] the first layer reads (scaled for Gemma).
  torch::Tensor embed(const torch::Tensor& tokens);
  // The final-norm output [B, T, dim] before the output projection (for a chunked loss).
  torch::Tensor forward_hidden(const torch::Tensor& tokens, const torch::Tensor& input_pos = {},
                               const torch::Tensor& mask = {});
  // hidden [..., dim] -> logits [..., vocab] (the tied embedding matrix or `output`; soft-capped when
  // the model caps its logits).
  torch::Tensor output_projection(const torch::Tensor& hidden);

  // Pieces of forward_hidden for callers that drive the layers themselves.
  PositionInfo make_positions(int64_t batch, int64_t seq_len, const torch::Tensor& input_pos,
                              const torch::Tensor& mask, const torch::Device& device);
  torch::Tensor forward_layer(int64_t index, const torch::Tensor& h, const PositionInfo& pos);
  // Wraps each layer call of forward_hidden (activation checkpointing hook). `run` computes the layer.
  using LayerCall = std::function<torch::Tensor(const torch::Tensor& h)>;
  using LayerWrapper = std::function<torch::Tensor(int64_t index, const LayerCall& run, const torch::Tensor& h)>;
  void set_layer_wrapper(LayerWrapper wrapper) { layer_wrapper_ = std::move(wrapper); }

  // KV cache for generation: allocates [batch, KV, max_len, D] per layer (max_len <= 0: max_seq_len).
  void setup_caches(int64_t batch, torch::ScalarType dtype, int64_t max_len = 0);
  void reset_caches() { cache_pos_ = 0; }  // start a new sequence; keeps the allocation
  void teardown_caches();
  bool caches_are_enabled() const { return cache_len_ > 0; }
  int64_t cache_position() const { return cache_pos_; }

  const ModelArgs& args() const { return args_; }
  bool tied() const { return args_.tie_word_embeddings; }
  TransformerSelfAttentionLayerImpl& layer(int64_t index) { return *layers_.at(static_cast<size_t>(index)); }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }

  torch::nn::Embedding tok_embeddings{nullptr};
  torch::nn::ModuleList layers;
  RMSNorm norm{nullptr};
  torch::nn::AnyModule output;  // empty when the embedding is tied

 private:
  ModelArgs args_;
  std::vector<TransformerSelfAttentionLayer> layers_;
  RotaryTables rope_;
  std::optional<RotaryTables> local_rope_;  // sliding layers' own rotary (Gemma 3)
  LayerWrapper layer_wrapper_;
  int64_t cache_len_ = 0;
  int64_t cache_pos_ = 0;
};
TORCH_MODULE(TransformerDecoder);

// Builds the decoder (validates the arguments first). The default factory gives plain linears. Refuses,
// before allocating, a model whose weights (at the build dtype, or as `storage` says) exceed this
// machine's memory.
TransformerDecoder build_decoder(const ModelArgs& args, const LinearFactory& factory = make_plain_linear,
                                 const SiteStorage& storage = {});

// Number of parameter elements (each shared tensor once).
int64_t count_parameters(const torch::nn::Module& module, bool trainable_only = false);

// True for the parameters a full checkpoint holds (tok_embeddings.weight, layers.N.attn.q_proj.weight,
// biases, q/k norms, ..., norm.scale, output.weight; a leading `_orig_mod.` is ignored), false for
// adapters and the like.
bool is_base_parameter(const std::string& name);

// Seeded random initialization of the base parameters, as Hugging Face initializes its models: weights
// ~ N(0, std^2), biases 0, norm scales 1 (0 for Gemma's (1 + w) norms). Deterministic for a seed (own
// generator; no global RNG state touched).
void init_weights(torch::nn::Module& model, uint64_t seed, double std = 0.02);

// Fills `weight` (any floating dtype, contiguous) with N(0, std^2) drawn in fp32 from `gen`, `chunk`
// elements (a multiple of 16) at a time. The values equal one fp32 draw of the whole tensor, cast (ATen's
// normal_ turns one stream of uniforms into normals in blocks of 16), without the whole fp32 copy: 3.4
// GiB next to a 9B bf16 model for Gemma 2's embedding alone.
void fill_normal(torch::Tensor& weight, double std, at::Generator& gen, int64_t chunk = int64_t{1} << 24);

}  // namespace tb::models
