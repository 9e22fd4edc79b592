#include "models/transformer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <regex>
#include <stdexcept>
#include <unordered_set>

#include "models/compiled_names.h"

namespace tb::models {

torch::nn::AnyModule make_plain_linear(const ProjectionSite& site) {
  return torch::nn::AnyModule(
      torch::nn::Linear(torch::nn::LinearOptions(site.in_features, site.out_features).bias(false)));
}

const std::vector<std::string>& projection_names() {
  static const std::vector<std::string> names = {"q_proj", "k_proj", "v_proj", "output_proj",
                                                 "w1",     "w2",     "w3",     "output"};
  return names;
}

TransformerSelfAttentionLayerImpl::TransformerSelfAttentionLayerImpl(MultiHeadAttention a, FeedForward m, int64_t dim,
                                                                     double norm_eps)
    : sa_norm(dim, norm_eps), attn(std::move(a)), mlp_norm(dim, norm_eps), mlp(std::move(m)) {
  register_module("sa_norm", sa_norm);
  register_module("attn", attn);
  register_module("mlp_norm", mlp_norm);
  register_module("mlp", mlp);
}

torch::Tensor TransformerSelfAttentionLayerImpl::forward(const torch::Tensor& x, const PositionInfo& pos) {
  const auto h = x + attn->forward(sa_norm->forward(x), pos);
  return h + mlp->forward(mlp_norm->forward(h));
}

namespace {
const ModelArgs& validated(const ModelArgs& a) {
  a.validate();
  return a;
}

torch::nn::AnyModule checked(const LinearFactory& factory, const ProjectionSite& site) {
  auto m = factory(site);
  if (m.is_empty())
    throw std::invalid_argument("linear factory returned no module for " + site.name + " of layer " +
                                std::to_string(site.layer));
  return m;
}
}  // namespace

TransformerDecoderImpl::TransformerDecoderImpl(const ModelArgs& a, const LinearFactory& factory)
    : args_(validated(a)), rope_(a.head_dim(), a.rope_base, a.rope_scaling, a.max_seq_len) {
  const int64_t dim = a.embed_dim, hd = a.head_dim(), kv_dim = a.num_kv_heads * hd;
  tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(a.vocab_size, dim));
  layers = register_module("layers", torch::nn::ModuleList());
  const AttentionDims dims{dim, a.num_heads, a.num_kv_heads, hd};
  for (int64_t i = 0; i < a.num_layers; ++i) {
    auto site = [&](const char* name, int64_t in, int64_t out) { return checked(factory, {name, i, in, out}); };
    // One statement each: the factory sees the projections in a fixed order (argument order is unspecified).
    auto q = site("q_proj", dim, a.num_heads * hd);
    auto k = site("k_proj", dim, kv_dim);
    auto v = site("v_proj", dim, kv_dim);
    auto o = site("output_proj", a.num_heads * hd, dim);
    auto w1 = site("w1", dim, a.intermediate_dim);
    auto w2 = site("w2", a.intermediate_dim, dim);
    auto w3 = site("w3", dim, a.intermediate_dim);
    MultiHeadAttention attn(dims, std::move(q), std::move(k), std::move(v), std::move(o));
    FeedForward mlp(std::move(w1), std::move(w2), std::move(w3));
    TransformerSelfAttentionLayer layer(std::move(attn), std::move(mlp), dim, a.norm_eps);
    layers->push_back(layer);
    layers_.push_back(layer);
  }
  norm = register_module("norm", RMSNorm(dim, a.norm_eps));
  if (!a.tie_word_embeddings) {
    output = checked(factory, {"output", -1, dim, a.vocab_size});
    register_module("output", output.ptr());
  }
}

PositionInfo TransformerDecoderImpl::make_positions(int64_t batch, int64_t seq_len, const torch::Tensor& input_pos,
                                                    const torch::Tensor& mask, const torch::Device& device) {
  PositionInfo p;
  const auto i64 = torch::TensorOptions().dtype(torch::kLong).device(device);
  if (caches_are_enabled()) {
    if (batch > layers_.front()->attn->k_cache_batch())
      throw std::invalid_argument("batch of " + std::to_string(batch) + " exceeds the KV cache's batch");
    p.input_pos = input_pos.defined() ? input_pos.to(i64) : torch::arange(cache_pos_, cache_pos_ + seq_len, i64);
    if (p.input_pos.dim() != 1 || p.input_pos.size(0) != seq_len)
      throw std::invalid_argument("with the KV cache, input_pos must be 1-D with one position per token");
    p.kv_len = p.input_pos.max().item<int64_t>() + 1;
    if (p.kv_len > cache_len_)
      throw std::invalid_argument("position " + std::to_string(p.kv_len - 1) + " is beyond the KV cache of " +
                                  std::to_string(cache_len_));
    std::tie(p.cos, p.sin) = rope_.at(p.input_pos);
    p.blocked = mask.defined() ? mask.logical_not()
                               : torch::arange(p.kv_len, i64).unsqueeze(0).gt(p.input_pos.unsqueeze(1));
    return p;
  }
  p.kv_len = seq_len;
  if (input_pos.defined())
    std::tie(p.cos, p.sin) = rope_.at(input_pos.to(i64));
  else
    std::tie(p.cos, p.sin) = rope_.first(seq_len, device);
  p.blocked = mask.defined() ? mask.logical_not()
                             : torch::ones({seq_len, seq_len}, torch::TensorOptions().dtype(torch::kBool).device(device))
                                   .triu(1);
  return p;
}

torch::Tensor TransformerDecoderImpl::forward_layer(int64_t index, const torch::Tensor& h, const PositionInfo& pos) {
  return layers_.at(static_cast<size_t>(index))->forward(h, pos);
}

torch::Tensor TransformerDecoderImpl::forward_hidden(const torch::Tensor& tokens, const torch::Tensor& input_pos,
                                                     const torch::Tensor& mask) {
  if (tokens.dim() != 2) throw std::invalid_argument("tokens must be [batch, seq_len]");
  const auto pos = make_positions(tokens.size(0), tokens.size(1), input_pos, mask, tok_embeddings->weight.device());
  auto h = tok_embeddings->forward(tokens);
  for (int64_t i = 0; i < num_layers(); ++i) {
    if (layer_wrapper_)
      h = layer_wrapper_(i, [&, i](const torch::Tensor& x) { return forward_layer(i, x, pos); }, h);
    else
      h = forward_layer(i, h, pos);
  }
  if (caches_are_enabled()) cache_pos_ = std::max(cache_pos_, pos.kv_len);
  return norm->forward(h);
}

torch::Tensor TransformerDecoderImpl::output_projection(const torch::Tensor& hidden) {
  return tied() ? torch::linear(hidden, tok_embeddings->weight) : output.forward(hidden);
}

torch::Tensor TransformerDecoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& input_pos,
                                              const torch::Tensor& mask) {
  return output_projection(forward_hidden(tokens, input_pos, mask));
}

void TransformerDecoderImpl::setup_caches(int64_t batch, torch::ScalarType dtype, int64_t max_len) {
  const int64_t len = max_len > 0 ? std::min(max_len, args_.max_seq_len) : args_.max_seq_len;
  const auto device = tok_embeddings->weight.device();
  for (auto& layer : layers_) layer->attn->setup_cache(batch, len, dtype, device);
  cache_len_ = len;
  cache_pos_ = 0;
}

void TransformerDecoderImpl::teardown_caches() {
  for (auto& layer : layers_) layer->attn->teardown_cache();
  cache_len_ = 0;
  cache_pos_ = 0;
}

TransformerDecoder build_decoder(const ModelArgs& args, const LinearFactory& factory) {
  args.validate();
  return TransformerDecoder(args, factory);
}

int64_t count_parameters(const torch::nn::Module& module, bool trainable_only) {
  std::unordered_set<const void*> seen;
  int64_t n = 0;
  for (const auto& p : module.parameters()) {
    if (trainable_only && !p.requires_grad()) continue;
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    n += p.numel();
  }
  return n;
}

bool is_base_parameter(const std::string& full_name) {
  static const std::regex base(
      R"((tok_embeddings\.weight|norm\.scale|output\.weight|)"
      R"(layers\.\d+\.(sa_norm\.scale|mlp_norm\.scale|attn\.(q|k|v|output)_proj\.weight|mlp\.w[123]\.weight)))");
  return std::regex_match(strip_compiled_prefix(full_name), base);
}

void init_weights(torch::nn::Module& model, uint64_t seed, double std) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& item : model.named_parameters()) {
    if (!is_base_parameter(item.key())) continue;
    auto& p = item.value();
    if (item.key().size() >= 6 && item.key().compare(item.key().size() - 6, 6, ".scale") == 0) {
      p.fill_(1.0);
      continue;
    }
    // Drawn in fp32 on the CPU so a seed gives the same weights in every dtype and on every device.
    auto values = torch::empty(p.sizes(), torch::kFloat);
    values.normal_(0.0, std, gen);
    p.copy_(values);
  }
}

}  // namespace tb::models
