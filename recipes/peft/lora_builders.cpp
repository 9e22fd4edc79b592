#include "peft/lora_builders.h"

#include <algorithm>
#include <stdexcept>

#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "quant/nf4.h"

namespace tb::peft {

void validate_lora_settings(const LoraSettings& s) {
  for (const auto& m : s.lora_attn_modules)
    if (m != "q_proj" && m != "k_proj" && m != "v_proj" && m != "output_proj")
      throw std::invalid_argument("lora_attn_modules: '" + m + "' is not one of q_proj, k_proj, v_proj, output_proj");
  if (s.lora_rank <= 0) throw std::invalid_argument("lora_rank must be positive");
  if (s.lora_dropout < 0 || s.lora_dropout >= 1) throw std::invalid_argument("lora_dropout must be in [0, 1)");
}

bool lora_targets(const LoraSettings& s, const models::ProjectionSite& site) {
  if (site.name == "output") return s.apply_lora_to_output;
  if (site.name == "w1" || site.name == "w2" || site.name == "w3" || site.name == "gate_up_proj")
    return s.apply_lora_to_mlp;
  const auto targeted = [&](const char* name) {
    return std::find(s.lora_attn_modules.begin(), s.lora_attn_modules.end(), name) != s.lora_attn_modules.end();
  };
  // Phi-3's fused projection adapts as one module (as PEFT adapts it) when any of q, k, v is targeted.
  if (site.name == "qkv_proj") return targeted("q_proj") || targeted("k_proj") || targeted("v_proj");
  return targeted(site.name.c_str());
}

models::TransformerDecoder build_lora_decoder(const models::ModelArgs& args, const LoraSettings& settings) {
  args.validate();
  validate_lora_settings(settings);
  if (settings.use_dora)
    throw std::invalid_argument("use_dora: DoRA is not supported; use plain LoRA (use_dora: false)");
  if (settings.apply_lora_to_output && args.tie_word_embeddings)
    throw std::invalid_argument(
        "apply_lora_to_output: this model ties its output to the embedding, so it has no "
        "output projection to adapt");
  // Under NF4OnLoad the targeted bases are made empty and quantised as they load (peft/qlora.h); the
  // memory check before the build counts them at NF4's size.
  const bool nf4_on_load = settings.quantize_base && NF4OnLoad::active();
  const models::LinearFactory factory = [&settings, nf4_on_load](const models::ProjectionSite& site) {
    if (!lora_targets(settings, site)) return models::make_plain_linear(site);
    // A rank above min(in, out) adds nothing a full update would not, and a mistyped one (1,000,000) failed
    // in the allocator: said before the adapter is made.
    if (const int64_t most = std::min(site.in_features, site.out_features); settings.lora_rank > most)
      throw std::invalid_argument("lora_rank " + std::to_string(settings.lora_rank) + " is larger than the " + site.name +
                                  " layers it adapts (" + std::to_string(site.in_features) + " x " +
                                  std::to_string(site.out_features) + "): use at most " + std::to_string(most));
    return torch::nn::AnyModule(LoRALinear(site.in_features, site.out_features, settings.lora_rank, settings.lora_alpha,
                                           settings.lora_dropout, site.bias, nf4_on_load));
  };
  const models::SiteStorage nf4_storage = [&settings](const models::ProjectionSite& site) {
    return lora_targets(settings, site) ? quant::nf4_bytes_per_parameter() : 0.0;
  };
  models::TransformerDecoder model = models::build_decoder(args, factory, nf4_on_load ? nf4_storage : models::SiteStorage{});
  // The base weights are stored in NF4 as the checkpoint is copied in (under NF4OnLoad) or once it is
  // in them (peft::quantize_lora_bases); the flag tells the recipe to do so.
  if (settings.quantize_base) mark_for_quantization(*model);
  return model;
}

}  // namespace tb::peft
