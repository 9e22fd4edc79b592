// Components of recipes/models/ in the registry. Every model component builds a
// tb::models::TransformerDecoder (see models/transformer.h).
#include "config/components.h"
#include "config/registry.h"

#include <stdexcept>

#include "checkpoint/hf_config.h"
#include "models/lora_builders.h"
#include "models/model_args.h"
#include "models/transformer.h"

namespace tb::models {

namespace {

using config::Args;
using config::ArgSpec;
using config::ArgType;
using config::ComponentSpec;

config::ArgSpec arg(std::string name, config::ArgType type, bool required, bool nullable, std::string default_value,
                    std::string help, std::vector<std::string> choices = {}) {
  config::ArgSpec s;
  s.name = std::move(name);
  s.type = type;
  s.required = required;
  s.nullable = nullable;
  s.default_value = std::move(default_value);
  s.help = std::move(help);
  s.choices = std::move(choices);
  return s;
}

struct Preset {
  const char* canonical_prefix;  // e.g. torchtune.models.llama2.
  const char* name;              // e.g. llama2_7b
  const char* help;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"torchtune.models.llama2.", "llama2_7b", "Llama 2 7B"},
      {"torchtune.models.llama2.", "llama2_13b", "Llama 2 13B"},
      {"torchtune.models.llama3_2.", "llama3_2_1b", "Llama 3.2 1B (tied embeddings, rope scaling 32)"},
      {"torchtune.models.llama3_1.", "llama3_1_8b", "Llama 3.1 8B (rope scaling 8)"},
      {"torchtune.models.mistral.", "mistral_7b", "Mistral 7B (full attention, no sliding window)"},
      {"tunebench.models.", "llama2_stories15m", "llama2.c stories15M: dim 288, 6 layers, 6 heads, tied embeddings"},
      {"tunebench.models.", "llama2_stories110m", "llama2.c stories110M: dim 768, 12 layers, 12 heads, tied embeddings"},
      {"tunebench.models.", "llama_tiny_test", "tiny test model: dim 64, 2 layers, 4 heads, 2 kv heads, vocab 512"},
  };
  return all;
}

std::vector<ArgSpec> lora_arg_specs(bool quantize_default) {
  return {
      arg("lora_attn_modules", ArgType::StringList, true, false, "", "attention projections to adapt: q_proj, k_proj, v_proj, output_proj"),
      arg("apply_lora_to_mlp", ArgType::Bool, false, false, "false", "adapt w1, w2, w3"),
      arg("apply_lora_to_output", ArgType::Bool, false, false, "false", "adapt the output projection"),
      arg("lora_rank", ArgType::Int, false, false, "8", "rank of the low-rank update"),
      arg("lora_alpha", ArgType::Float, false, false, "16.0", "scaling numerator (update scaled by alpha / rank)"),
      arg("lora_dropout", ArgType::Float, false, false, "0.0", "dropout on the LoRA path"),
      arg("use_dora", ArgType::Bool, false, false, "false", "weight-decomposed LoRA (DoRA)"),
      arg("quantize_base", ArgType::Bool, false, false, quantize_default ? "true" : "false", "NF4 base weights (QLoRA)"),
  };
}

std::vector<ArgSpec> generic_arg_specs(bool llama3) {
  std::vector<ArgSpec> specs = {
      arg("vocab_size", ArgType::Int, true, false, "", "vocabulary size"),
      arg("num_layers", ArgType::Int, true, false, "", "number of decoder layers"),
      arg("num_heads", ArgType::Int, true, false, "", "query heads"),
      arg("num_kv_heads", ArgType::Int, false, true, "", "key/value heads (default num_heads)"),
      arg("embed_dim", ArgType::Int, true, false, "", "model dimension"),
      arg("max_seq_len", ArgType::Int, true, false, "", "longest sequence"),
      arg("intermediate_dim", ArgType::Int, false, true, "", "MLP hidden size (default from embed_dim)"),
      arg("attn_dropout", ArgType::Float, false, false, "0.0", "attention dropout (0 only)"),
      arg("norm_eps", ArgType::Float, false, false, "1e-5", "RMSNorm epsilon"),
      arg("tie_word_embeddings", ArgType::Bool, false, false, "false", "output projection shares the embedding"),
  };
  if (llama3) specs.push_back(arg("rope_base", ArgType::Float, false, false, "500000.0", "rotary base theta"));
  return specs;
}

ModelArgs generic_args(const Args& a, bool llama3) {
  ModelArgs m;
  m.vocab_size = a.get_int("vocab_size");
  m.num_layers = a.get_int("num_layers");
  m.num_heads = a.get_int("num_heads");
  m.num_kv_heads = a.has("num_kv_heads") ? a.get_int("num_kv_heads") : m.num_heads;
  m.embed_dim = a.get_int("embed_dim");
  m.max_seq_len = a.get_int("max_seq_len");
  m.intermediate_dim = a.has("intermediate_dim") ? a.get_int("intermediate_dim") : scale_hidden_dim_for_mlp(m.embed_dim);
  m.norm_eps = a.get_float("norm_eps");
  m.tie_word_embeddings = a.get_bool("tie_word_embeddings");
  m.rope_base = llama3 ? a.get_float("rope_base") : 10000.0;
  if (a.get_float("attn_dropout") != 0.0) throw std::invalid_argument("attn_dropout other than 0.0 is not supported");
  return m;
}

LoraSettings lora_settings(const Args& a) {
  LoraSettings s;
  s.lora_attn_modules = a.get_strings("lora_attn_modules");
  s.apply_lora_to_mlp = a.get_bool("apply_lora_to_mlp");
  s.apply_lora_to_output = a.get_bool("apply_lora_to_output");
  s.lora_rank = a.get_int("lora_rank");
  s.lora_alpha = a.get_float("lora_alpha");
  s.lora_dropout = a.get_float("lora_dropout");
  s.use_dora = a.get_bool("use_dora");
  s.quantize_base = a.get_bool("quantize_base");
  return s;
}

std::vector<ArgSpec> concat(std::vector<ArgSpec> a, const std::vector<ArgSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ComponentSpec model_spec(const std::string& canonical, const std::string& alias, std::vector<ArgSpec> args,
                         const std::string& help) {
  ComponentSpec spec;
  spec.kind = "model";
  spec.name = canonical;
  spec.aliases = {alias};
  spec.args = std::move(args);
  spec.help = help;
  return spec;
}

}  // namespace

void register_components(config::Registry& registry) {
  for (const auto& p : presets()) {
    const std::string name = p.name, prefix = p.canonical_prefix;
    const ModelArgs args = *preset_args(name);
    registry.add<TransformerDecoder>(model_spec(prefix + name, name, {}, p.help),
                                     [args](const Args&) { return build_decoder(args); });
    for (const bool q : {false, true}) {
      const std::string variant = (q ? "qlora_" : "lora_") + name;
      registry.add<TransformerDecoder>(
          model_spec(prefix + variant, variant, lora_arg_specs(q), std::string(p.help) + (q ? ", QLoRA" : ", LoRA")),
          [args](const Args& a) { return build_lora_decoder(args, lora_settings(a)); });
    }
  }

  for (const bool llama3 : {false, true}) {
    const std::string family = llama3 ? "llama3" : "llama2";
    const std::string prefix = "torchtune.models." + family + ".";
    registry.add<TransformerDecoder>(
        model_spec(prefix + family, family, generic_arg_specs(llama3), "a " + family + " decoder of any size"),
        [llama3](const Args& a) { return build_decoder(generic_args(a, llama3)); });
    registry.add<TransformerDecoder>(
        model_spec(prefix + "lora_" + family, "lora_" + family, concat(generic_arg_specs(llama3), lora_arg_specs(false)),
                   "a LoRA " + family + " decoder of any size"),
        [llama3](const Args& a) { return build_lora_decoder(generic_args(a, llama3), lora_settings(a)); });
  }

  const std::vector<ArgSpec> path_arg = {
      arg("path", ArgType::Path, true, false, "", "a Hugging Face checkpoint folder (or its config.json)")};
  registry.add<TransformerDecoder>(
      model_spec("tunebench.models.from_hf_config", "from_hf_config", path_arg,
                 "the architecture described by a checkpoint's config.json"),
      [](const Args& a) { return build_decoder(checkpoint::read_hf_model_args(a.get_string("path"))); });
  for (const bool q : {false, true}) {
    const std::string variant = std::string(q ? "qlora" : "lora") + "_from_hf_config";
    registry.add<TransformerDecoder>(
        model_spec("tunebench.models." + variant, variant, concat(path_arg, lora_arg_specs(q)),
                   std::string(q ? "QLoRA" : "LoRA") + " on the architecture described by a checkpoint's config.json"),
        [](const Args& a) {
          return build_lora_decoder(checkpoint::read_hf_model_args(a.get_string("path")), lora_settings(a));
        });
  }
}

}  // namespace tb::models
