#include "training/memory_estimate.h"

#include <algorithm>

#include "models/transformer.h"
#include "peft/lora_builders.h"
#include "quant/nf4.h"
#include "text/strings.h"
#include "training/adamw8bit.h"

namespace tb::training {

namespace {

peft::LoraSettings lora_settings(const LoraTargets& t) {
  peft::LoraSettings s;
  s.lora_attn_modules = t.attn_modules;
  s.apply_lora_to_mlp = t.mlp;
  s.apply_lora_to_output = t.output;
  s.lora_rank = t.rank;
  return s;
}

// The element counts of the tensors that train: every parameter of a full fine-tune (each linear, the
// embedding, the rest as tensors of embed_dim), or each adapter's A and B.
std::vector<int64_t> trainable_tensors(const models::ModelArgs& a, Adapters adapters, const LoraTargets& lora) {
  std::vector<int64_t> sizes;
  if (adapters == Adapters::None) {
    int64_t counted = 0;
    auto add = [&](int64_t n) {
      sizes.push_back(n);
      counted += n;
    };
    add(a.vocab_size * a.embed_dim);
    for (int64_t layer = 0; layer < a.num_layers; ++layer)
      for (const auto& site : models::layer_projection_sites(a, layer)) add(site.in_features * site.out_features);
    if (!a.tie_word_embeddings) add(a.vocab_size * a.embed_dim);
    for (int64_t rest = a.parameter_count() - counted; rest > 0; rest -= a.embed_dim)
      sizes.push_back(std::min(rest, a.embed_dim));
    return sizes;
  }
  const auto settings = lora_settings(lora);
  auto adapt = [&](const models::ProjectionSite& site) {
    if (peft::lora_targets(settings, site))
      sizes.insert(sizes.end(), {lora.rank * site.in_features, site.out_features * lora.rank});
  };
  for (int64_t layer = 0; layer < a.num_layers; ++layer)
    for (const auto& site : models::layer_projection_sites(a, layer)) adapt(site);
  adapt(models::output_site(a));
  return sizes;
}

}  // namespace

MemoryEstimate estimate_memory(const models::ModelArgs& a, Adapters adapters, const std::string& dtype,
                               const LoraTargets& lora, int64_t batch_size, int64_t seq_len,
                               const OptimizerStates& optimizer) {
  MemoryEstimate e;
  const double b = dtype == "bf16" || dtype == "bfloat16" ? 2.0 : 4.0;
  e.total_params = a.parameter_count();
  e.batch_size = std::max<int64_t>(1, batch_size);
  e.seq_len = std::max<int64_t>(1, seq_len);

  const auto trainable = trainable_tensors(a, adapters, lora);
  if (adapters == Adapters::None) {
    e.trainable_params = e.total_params;
    e.weight_bytes = double(e.total_params) * b;
  } else {
    const auto settings = lora_settings(lora);
    for (int64_t layer = 0; layer < a.num_layers; ++layer)
      for (const auto& site : models::layer_projection_sites(a, layer))
        if (peft::lora_targets(settings, site)) e.quantized_params += site.in_features * site.out_features;
    // A tied output shares the embedding, which stays in the compute dtype.
    if (lora.output && !a.tie_word_embeddings) e.quantized_params += a.embed_dim * a.vocab_size;
    for (const int64_t n : trainable) e.adapter_params += n;
    e.trainable_params = e.adapter_params;
    if (adapters == Adapters::Qlora)
      e.weight_bytes = double(e.quantized_params) * quant::nf4_bytes_per_parameter() +
                       double(e.total_params - e.quantized_params) * b;
    else
      e.weight_bytes = double(e.total_params) * b;
    e.weight_bytes += double(e.adapter_params) * b;
    if (adapters != Adapters::Qlora) e.quantized_params = 0;
    if (adapters == Adapters::Qlora) e.nf4_bytes_per_param = quant::nf4_bytes_per_parameter();
  }
  e.gradient_bytes = double(e.trainable_params) * b;
  e.gradients_one_at_a_time = optimizer.in_backward;
  if (optimizer.in_backward)
    e.gradient_bytes = trainable.empty() ? 0.0 : double(*std::max_element(trainable.begin(), trainable.end())) * b;
  e.optimizer_bytes = 2.0 * double(e.trainable_params) * b;
  e.eight_bit_optimizer = optimizer.eight_bit;
  if (optimizer.eight_bit) {
    e.optimizer_bytes = 0;
    for (const int64_t n : trainable) e.optimizer_bytes += double(AdamW8bit::state_bytes_of(n, optimizer.min_8bit_size));
  }

  // What backward keeps per layer, per token: norm inputs, q/k/v, attention output, the MLP's three
  // hidden-size tensors and the residuals; plus the attention probabilities (T x T per head) of the eager
  // path and the fp32 logits with their gradient. A rough guide, not a measurement.
  const double tokens = double(e.batch_size) * double(e.seq_len);
  const double kv = double(a.num_kv_heads * a.head_dim());
  const double per_token = 6.0 * double(a.embed_dim) + 2.0 * kv + 4.0 * double(a.intermediate_dim);
  const double attention = double(e.batch_size) * double(a.num_heads) * double(e.seq_len) * double(e.seq_len);
  e.activation_bytes =
      double(a.num_layers) * (tokens * per_token + attention) * b + tokens * double(a.vocab_size) * 4.0 * 2.0;
  return e;
}

namespace {
// `node`'s `key`, or an undefined node (yaml-cpp throws on a missing key's type).
YAML::Node child(const YAML::Node& node, const char* key) {
  if (!node.IsDefined() || !node.IsMap()) return {};
  const YAML::Node v = node[key];
  return v.IsDefined() ? v : YAML::Node();
}
std::string scalar_at(const YAML::Node& root, const char* section, const char* key) {
  const YAML::Node v = child(child(root, section), key);
  return v.IsDefined() && v.IsScalar() ? v.Scalar() : std::string();
}
bool is_true(const YAML::Node& v) {
  if (!v.IsDefined() || !v.IsScalar()) return false;
  const std::string& s = v.Scalar();
  return s == "true" || s == "True" || s == "TRUE";
}
}  // namespace

LoraTargets lora_targets_of(const YAML::Node& root) {
  LoraTargets t;
  const YAML::Node model = child(root, "model");
  const YAML::Node modules = child(model, "lora_attn_modules");
  if (modules.IsDefined() && modules.IsSequence()) {
    t.attn_modules.clear();
    for (const auto& m : modules)
      if (m.IsScalar()) t.attn_modules.push_back(m.Scalar());
  }
  t.mlp = is_true(child(model, "apply_lora_to_mlp"));
  t.output = is_true(child(model, "apply_lora_to_output"));
  try {
    const YAML::Node rank = child(model, "lora_rank");
    if (rank.IsDefined() && rank.IsScalar()) t.rank = std::max<int64_t>(1, rank.as<int64_t>());
  } catch (const YAML::Exception&) {
  }
  return t;
}

OptimizerStates optimizer_states_of(const YAML::Node& root) {
  OptimizerStates states;
  const std::string component = scalar_at(root, "optimizer", "_component_");
  states.eight_bit = text::ends_with(component, "AdamW8bit") ||
                     (text::ends_with(component, "PagedAdamW") && scalar_at(root, "optimizer", "optim_bits") == "8");
  try {
    const std::string min = scalar_at(root, "optimizer", "min_8bit_size");
    if (!min.empty() && !text::starts_with(component, "torchao")) states.min_8bit_size = std::stoll(min);
  } catch (const std::exception&) {
  }
  states.in_backward = is_true(child(root, "optimizer_in_bwd"));
  return states;
}

}  // namespace tb::training
