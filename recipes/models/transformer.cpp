#include "models/transformer.h"

#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>
#include <regex>
#include <stdexcept>
#include <unordered_set>

#include "models/build_dtype.h"
#include "models/compiled_names.h"
#include "models/deferred_weight.h"
#include "text/strings.h"

namespace tb::models {

torch::nn::AnyModule make_plain_linear(const ProjectionSite& site) {
  return torch::nn::AnyModule(
      torch::nn::Linear(torch::nn::LinearOptions(site.in_features, site.out_features).bias(site.bias)));
}

const std::vector<std::string>& projection_names() {
  static const std::vector<std::string> names = {"q_proj", "k_proj", "v_proj", "qkv_proj",     "output_proj",
                                                 "w1",     "w2",     "w3",     "gate_up_proj", "output"};
  return names;
}

TransformerSelfAttentionLayerImpl::TransformerSelfAttentionLayerImpl(MultiHeadAttention a, FeedForward m, int64_t dim,
                                                                     double norm_eps, bool norm_offset,
                                                                     bool sandwich_norms)
    : sa_norm(dim, norm_eps, norm_offset), attn(std::move(a)), mlp_norm(dim, norm_eps, norm_offset), mlp(std::move(m)) {
  register_module("sa_norm", sa_norm);
  register_module("attn", attn);
  register_module("mlp_norm", mlp_norm);
  register_module("mlp", mlp);
  if (sandwich_norms) {
    sa_scale = register_module("sa_scale", RMSNorm(dim, norm_eps, norm_offset));
    mlp_scale = register_module("mlp_scale", RMSNorm(dim, norm_eps, norm_offset));
  }
}

torch::Tensor TransformerSelfAttentionLayerImpl::forward(const torch::Tensor& x, const PositionInfo& pos) {
  auto a = attn->forward(sa_norm->forward(x), pos);
  if (sa_scale) a = sa_scale->forward(a);
  const auto h = x + a;
  auto m = mlp->forward(mlp_norm->forward(h));
  if (mlp_scale) m = mlp_scale->forward(m);
  return h + m;
}

std::vector<ProjectionSite> layer_projection_sites(const ModelArgs& a, int64_t layer) {
  const int64_t dim = a.embed_dim, q_dim = a.num_heads * a.head_dim(), kv_dim = a.num_kv_heads * a.head_dim();
  std::vector<ProjectionSite> sites;
  if (a.fused_qkv) {
    sites.push_back({"qkv_proj", layer, dim, q_dim + 2 * kv_dim, a.attention_bias});
  } else {
    sites.push_back({"q_proj", layer, dim, q_dim, a.attention_bias});
    sites.push_back({"k_proj", layer, dim, kv_dim, a.attention_bias});
    sites.push_back({"v_proj", layer, dim, kv_dim, a.attention_bias});
  }
  sites.push_back({"output_proj", layer, q_dim, dim});
  if (a.fused_gate_up) {
    sites.push_back({"gate_up_proj", layer, dim, 2 * a.intermediate_dim});
    sites.push_back({"w2", layer, a.intermediate_dim, dim});
  } else {
    sites.push_back({"w1", layer, dim, a.intermediate_dim});
    sites.push_back({"w2", layer, a.intermediate_dim, dim});
    sites.push_back({"w3", layer, dim, a.intermediate_dim});
  }
  return sites;
}

ProjectionSite output_site(const ModelArgs& a) { return {"output", -1, a.embed_dim, a.vocab_size}; }

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

namespace {
std::optional<RotaryTables> local_rotary(const ModelArgs& a) {
  if (a.rope_local_base <= 0 || a.sliding_window <= 0) return std::nullopt;
  return RotaryTables(a.rotary_dim(), a.rope_local_base, std::nullopt, a.max_seq_len);
}
}  // namespace

TransformerDecoderImpl::TransformerDecoderImpl(const ModelArgs& a, const LinearFactory& factory)
    : args_(validated(a)),
      rope_(a.rotary_dim(), a.rope_base, a.rope_scaling, a.max_seq_len),
      local_rope_(local_rotary(a)) {
  const int64_t dim = a.embed_dim, hd = a.head_dim();
  // Each piece cast to the build dtype as soon as it is made (models/build_dtype.h).
  const auto dtype = BuildDtype::current();
  const auto cast = [dtype](torch::nn::Module& m) {
    if (dtype != torch::kFloat) m.to(dtype);
  };
  tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(a.vocab_size, dim));
  cast(*tok_embeddings);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < a.num_layers; ++i) {
    // One module per site, in the order layer_projection_sites gives them.
    std::vector<torch::nn::AnyModule> made;
    for (const auto& site : layer_projection_sites(a, i)) made.push_back(checked(factory, site));
    size_t next = 0;
    const auto take = [&] { return std::move(made.at(next++)); };
    AttentionDims dims{dim,
                       a.num_heads,
                       a.num_kv_heads,
                       hd,
                       a.attention_scale(),
                       a.attn_softcap,
                       a.layer_slides(i),
                       a.layer_slides(i) ? a.sliding_window : 0};
    // One take() a statement: the order of evaluation within one expression is unspecified.
    MultiHeadAttention attn{nullptr};
    if (a.fused_qkv) {
      auto qkv = take();
      auto o = take();
      attn = MultiHeadAttention(dims, std::move(qkv), std::move(o));
    } else {
      auto q = take();
      auto k = take();
      auto v = take();
      auto o = take();
      attn = MultiHeadAttention(dims, std::move(q), std::move(k), std::move(v), std::move(o));
    }
    if (a.qk_norm) attn->add_qk_norms(a.norm_eps, a.norm_offset);
    FeedForward mlp{nullptr};
    if (a.fused_gate_up) {
      auto gate_up = take();
      auto w2 = take();
      mlp = FeedForward(std::move(gate_up), std::move(w2), a.activation);
    } else {
      auto w1 = take();
      auto w2 = take();
      auto w3 = take();
      mlp = FeedForward(std::move(w1), std::move(w2), std::move(w3), a.activation);
    }
    TransformerSelfAttentionLayer layer(std::move(attn), std::move(mlp), dim, a.norm_eps, a.norm_offset,
                                        a.sandwich_norms);
    cast(*layer);
    layers->push_back(layer);
    layers_.push_back(layer);
  }
  norm = register_module("norm", RMSNorm(dim, a.norm_eps, a.norm_offset));
  cast(*norm);
  if (!a.tie_word_embeddings) {
    output = checked(factory, output_site(a));
    register_module("output", output.ptr());
    cast(*output.ptr());
  }
}

PositionInfo TransformerDecoderImpl::make_positions(int64_t batch, int64_t seq_len, const torch::Tensor& input_pos,
                                                    const torch::Tensor& mask, const torch::Device& device) {
  PositionInfo p;
  const auto i64 = torch::TensorOptions().dtype(torch::kLong).device(device);
  // Query positions against key positions (keys 0..L-1): the causal mask, and the window of sliding layers.
  torch::Tensor query_pos, key_pos;
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
    if (local_rope_) std::tie(p.cos_local, p.sin_local) = local_rope_->at(p.input_pos);
    query_pos = p.input_pos.unsqueeze(1);
    key_pos = torch::arange(p.kv_len, i64).unsqueeze(0);
    p.blocked = mask.defined() ? mask.logical_not() : key_pos.gt(query_pos);
  } else {
    p.kv_len = seq_len;
    if (input_pos.defined()) {
      std::tie(p.cos, p.sin) = rope_.at(input_pos.to(i64));
      if (local_rope_) std::tie(p.cos_local, p.sin_local) = local_rope_->at(input_pos.to(i64));
    } else {
      std::tie(p.cos, p.sin) = rope_.first(seq_len, device);
      if (local_rope_) std::tie(p.cos_local, p.sin_local) = local_rope_->first(seq_len, device);
    }
    p.blocked =
        mask.defined()
            ? mask.logical_not()
            : torch::ones({seq_len, seq_len}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
    query_pos = torch::arange(seq_len, i64).unsqueeze(1);
    key_pos = torch::arange(seq_len, i64).unsqueeze(0);
  }
  if (args_.sliding_window > 0) {
    // A sliding layer's query q sees keys k with q - window < k (Hugging Face's rule), besides the mask.
    const auto outside = key_pos.le(query_pos - args_.sliding_window);
    p.blocked_sliding = p.blocked.logical_or(p.blocked.dim() == 3 ? outside.unsqueeze(0) : outside);
  }
  return p;
}

torch::Tensor TransformerDecoderImpl::forward_layer(int64_t index, const torch::Tensor& h, const PositionInfo& pos) {
  return layers_.at(static_cast<size_t>(index))->forward(h, pos);
}

torch::Tensor TransformerDecoderImpl::forward_hidden(const torch::Tensor& tokens, const torch::Tensor& input_pos,
                                                     const torch::Tensor& mask) {
  if (tokens.dim() != 2) throw std::invalid_argument("tokens must be [batch, seq_len]");
  const auto pos = make_positions(tokens.size(0), tokens.size(1), input_pos, mask, tok_embeddings->weight.device());
  auto h = embed(tokens);
  for (int64_t i = 0; i < num_layers(); ++i) {
    if (layer_wrapper_)
      h = layer_wrapper_(
          i, [&, i](const torch::Tensor& x) { return forward_layer(i, x, pos); }, h);
    else
      h = forward_layer(i, h, pos);
  }
  if (caches_are_enabled()) cache_pos_ = std::max(cache_pos_, pos.kv_len);
  return norm->forward(h);
}

torch::Tensor TransformerDecoderImpl::embed(const torch::Tensor& tokens) {
  auto h = tok_embeddings->forward(tokens);
  if (!args_.scale_embeddings) return h;
  // Gemma: times sqrt(dim) rounded to the model's dtype first, as Hugging Face's normalizer tensor is.
  return h * torch::scalar_tensor(std::sqrt(static_cast<double>(args_.embed_dim)), h.options());
}

torch::Tensor TransformerDecoderImpl::output_projection(const torch::Tensor& hidden) {
  auto logits = tied() ? torch::linear(hidden, tok_embeddings->weight) : output.forward(hidden);
  if (args_.final_softcap <= 0) return logits;
  return torch::tanh(logits / args_.final_softcap) * args_.final_softcap;
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

namespace {
// The bytes the model's weights take once built: every parameter at the build dtype's size, except the
// sites `storage` stores otherwise (checked before the build, which allocates them).
double weight_bytes(const ModelArgs& args, const SiteStorage& storage) {
  const double dtype_bytes = double(c10::elementSize(BuildDtype::current()));
  double bytes = double(args.parameter_count()) * dtype_bytes;
  if (!storage) return bytes;
  // Every layer has the same projections (and what a factory makes of them does not depend on the layer).
  const auto sites = layer_projection_sites(args, 0);
  const auto adjust = [&](const ProjectionSite& site, double copies) {
    const double stored = storage(site);
    if (stored > 0) bytes -= copies * double(site.in_features) * double(site.out_features) * (dtype_bytes - stored);
  };
  for (const auto& site : sites) adjust(site, double(args.num_layers));
  if (!args.tie_word_embeddings) adjust(output_site(args), 1.0);
  return bytes;
}
}  // namespace

TransformerDecoder build_decoder(const ModelArgs& args, const LinearFactory& factory, const SiteStorage& storage) {
  args.validate();
  // Larger than this machine's memory, the build would run until the system kills the process.
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double needed = weight_bytes(args, storage) / gib;
  const double memory = pages > 0 && page_size > 0 ? double(pages) * double(page_size) / gib : 0.0;
  if (memory > 0 && needed > memory) {
    char text[200];
    std::snprintf(text, sizeof text, "%.1f GiB of %s weights%s, more than this machine's %.1f GiB of memory", needed,
                  c10::toString(BuildDtype::current()), storage ? " (quantised ones at their stored size)" : "",
                  memory);
    throw std::runtime_error("the model has " + std::to_string(args.parameter_count()) + " parameters: " + text);
  }
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
      R"((tok_embeddings\.weight|norm\.scale|output\.weight|layers\.\d+\.()"
      R"((sa_norm|mlp_norm|sa_scale|mlp_scale)\.scale|attn\.(q|k)_norm\.scale|)"
      R"(attn\.(q|k|v|qkv)_proj\.(weight|bias)|attn\.output_proj\.weight|mlp\.(w[123]|gate_up_proj)\.weight)))");
  return std::regex_match(strip_compiled_prefix(full_name), base);
}

void init_weights(torch::nn::Module& model, uint64_t seed, double std) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto deferred = deferred_weights(model);
  for (auto& item : model.named_parameters()) {
    if (!is_base_parameter(item.key())) continue;
    if (const auto it = deferred.find(item.key()); it != deferred.end()) {
      auto values = torch::empty(it->second->weight_shape(), torch::kFloat);  // the same draws as a held weight
      values.normal_(0.0, std, gen);
      it->second->take_weight(values);
      continue;
    }
    auto& p = item.value();
    if (text::ends_with(item.key(), ".scale") || text::ends_with(item.key(), ".bias")) {
      p.zero_();  // biases start at 0; norm scales are set below by their kind
      continue;
    }
    // Drawn in fp32 on the CPU so a seed gives the same weights in every dtype and on every device.
    fill_normal(p, std, gen);
  }
  for (const auto& m : model.modules())
    if (auto* norm = dynamic_cast<RMSNormImpl*>(m.get())) norm->scale.fill_(norm->offset ? 0.0 : 1.0);
}

void fill_normal(torch::Tensor& weight, double std, at::Generator& gen, int64_t chunk) {
  if (chunk <= 0 || chunk % 16 != 0) throw std::invalid_argument("fill_normal: chunk must be a positive multiple of 16");
  const int64_t n = weight.numel();
  auto flat = weight.view({n});
  // Whole pieces of `chunk`, then the rest in one (between chunk and 2 * chunk elements, so at least 16:
  // ATen's last, partial block of 16 redraws the final 16 values, which then lie in that same piece).
  int64_t start = 0;
  for (; n - start > 2 * chunk; start += chunk) {
    auto values = torch::empty({chunk}, torch::kFloat);
    values.normal_(0.0, std, gen);
    flat.narrow(0, start, chunk).copy_(values);
  }
  auto values = torch::empty({n - start}, torch::kFloat);
  values.normal_(0.0, std, gen);
  flat.narrow(0, start, n - start).copy_(values);
}

}  // namespace tb::models
