// The model components. Every one builds a tb::models::TransformerDecoder (models/transformer.h): the
// presets, the generic llama2/llama3 builders, the decoder a config.json describes, and the LoRA / QLoRA
// variant of each (peft/lora_builders.h).
#include <algorithm>
#include <stdexcept>

#include "checkpoint/hf_config.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "hub/repo_path.h"
#include "models/model_args.h"
#include "models/transformer.h"
#include "peft/lora_builders.h"

namespace tb::components {
namespace {

using config::arg;
using config::Args;
using config::ArgSpec;
using config::ArgType;
using config::ComponentSpec;
using models::ModelArgs;
using models::TransformerDecoder;
using peft::LoraSettings;

// The decoder a config.json describes. Its sizes come from that file, so a model that cannot be built
// from them (more weights than this machine's memory) is refused naming it; reading errors name it already.
// Settings errors (std::invalid_argument: a LoRA option that does not fit the model) are the config's.
template <class Build>
TransformerDecoder from_config_json(const std::string& path, const Build& build) {
  const ModelArgs args = checkpoint::read_hf_model_args(path);
  try {
    return build(args);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(checkpoint::config_file(path) + ": " + e.what());
  }
}

std::vector<ArgSpec> lora_arg_specs(bool quantize_default) {
  return {
      arg("lora_attn_modules", ArgType::StringList,
          "attention projections to adapt: q_proj, k_proj, v_proj, output_proj")
          .must_be_set(),
      arg("apply_lora_to_mlp", ArgType::Bool, "adapt w1, w2, w3").or_default("false"),
      arg("apply_lora_to_output", ArgType::Bool, "adapt the output projection").or_default("false"),
      arg("lora_rank", ArgType::Int, "rank of the low-rank update").or_default("8"),
      arg("lora_alpha", ArgType::Float, "scaling numerator (update scaled by alpha / rank)").or_default("16.0"),
      arg("lora_dropout", ArgType::Float, "dropout on the LoRA path").or_default("0.0"),
      arg("use_dora", ArgType::Bool, "weight-decomposed LoRA (DoRA)").or_default("false"),
      arg("quantize_base", ArgType::Bool, "NF4 base weights (QLoRA)").or_default(quantize_default ? "true" : "false"),
  };
}

std::vector<ArgSpec> generic_arg_specs(bool llama3) {
  std::vector<ArgSpec> specs = {
      arg("vocab_size", ArgType::Int, "vocabulary size").must_be_set(),
      arg("num_layers", ArgType::Int, "number of decoder layers").must_be_set(),
      arg("num_heads", ArgType::Int, "query heads").must_be_set(),
      arg("num_kv_heads", ArgType::Int, "key/value heads (default num_heads)").or_null(),
      arg("embed_dim", ArgType::Int, "model dimension").must_be_set(),
      arg("max_seq_len", ArgType::Int, "longest sequence").must_be_set(),
      arg("intermediate_dim", ArgType::Int, "MLP hidden size (default from embed_dim)").or_null(),
      arg("attn_dropout", ArgType::Float, "attention dropout (0 only)").or_default("0.0"),
      arg("norm_eps", ArgType::Float, "RMSNorm epsilon").or_default("1e-5"),
      arg("tie_word_embeddings", ArgType::Bool, "output projection shares the embedding").or_default("false"),
  };
  if (llama3) specs.push_back(arg("rope_base", ArgType::Float, "rotary base theta").or_default("500000.0"));
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
  m.intermediate_dim =
      a.has("intermediate_dim") ? a.get_int("intermediate_dim") : models::scale_hidden_dim_for_mlp(m.embed_dim);
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
  if (std::any_of(spec.args.begin(), spec.args.end(), [](const ArgSpec& a) { return a.name == "use_dora"; })) {
    spec.check = [](const YAML::Node& node, std::string* argument) -> std::string {
      const YAML::Node dora = node["use_dora"];
      bool on = false;
      if (!dora || !YAML::convert<bool>::decode(dora, on) || !on) return "";
      *argument = "use_dora";
      return "DoRA is not supported here: use plain LoRA (use_dora: false)";
    };
  }
  return spec;
}

}  // namespace

void register_models(config::Registry& registry) {
  for (const auto& p : models::presets()) {
    const std::string name = p.name, prefix = p.component_namespace;
    const ModelArgs args = p.args();
    registry.add<TransformerDecoder>(model_spec(prefix + name, name, {}, p.help),
                                     [args](const Args&) { return models::build_decoder(args); });
    for (const bool q : {false, true}) {
      const std::string variant = (q ? "qlora_" : "lora_") + name;
      registry.add<TransformerDecoder>(
          model_spec(prefix + variant, variant, lora_arg_specs(q), std::string(p.help) + (q ? ", QLoRA" : ", LoRA")),
          [args](const Args& a) { return peft::build_lora_decoder(args, lora_settings(a)); });
    }
  }

  for (const bool llama3 : {false, true}) {
    const std::string family = llama3 ? "llama3" : "llama2";
    const std::string prefix = "torchtune.models." + family + ".";
    registry.add<TransformerDecoder>(
        model_spec(prefix + family, family, generic_arg_specs(llama3), "a " + family + " decoder of any size"),
        [llama3](const Args& a) { return models::build_decoder(generic_args(a, llama3)); });
    registry.add<TransformerDecoder>(
        model_spec(prefix + "lora_" + family, "lora_" + family,
                   concat(generic_arg_specs(llama3), lora_arg_specs(false)),
                   "a LoRA " + family + " decoder of any size"),
        [llama3](const Args& a) { return peft::build_lora_decoder(generic_args(a, llama3), lora_settings(a)); });
  }

  // torchtune's multimodal builders: named so a config gets one line saying why, not "unknown component".
  for (const char* name : {"llama3_2_vision_11b", "lora_llama3_2_vision_11b", "qlora_llama3_2_vision_11b",
                           "llama3_2_vision_90b", "lora_llama3_2_vision_90b", "qlora_llama3_2_vision_90b"})
    registry.add<TransformerDecoder>(
        config::unsupported_component("model", std::string("torchtune.models.llama3_2_vision.") + name, {name},
                                      "Llama 3.2 Vision is a multimodal (image + text) model; Tunebench trains "
                                      "text decoders only"),
        [](const Args&) -> TransformerDecoder { throw std::logic_error("unsupported component built"); });

  const std::vector<ArgSpec> path_arg = {
      arg("path", ArgType::Path, "a Hugging Face checkpoint folder (or its config.json)").must_be_set()};
  registry.add<TransformerDecoder>(
      model_spec("tunebench.models.from_hf_config", "from_hf_config", path_arg,
                 "the architecture described by a checkpoint's config.json"),
      [](const Args& a) {
        return from_config_json(hub::resolve_model_path(a.get_string("path")), [](const ModelArgs& args) { return models::build_decoder(args); });
      });
  for (const bool q : {false, true}) {
    const std::string variant = std::string(q ? "qlora" : "lora") + "_from_hf_config";
    registry.add<TransformerDecoder>(
        model_spec("tunebench.models." + variant, variant, concat(path_arg, lora_arg_specs(q)),
                   std::string(q ? "QLoRA" : "LoRA") + " on the architecture described by a checkpoint's config.json"),
        [](const Args& a) {
          const LoraSettings settings = lora_settings(a);
          return from_config_json(hub::resolve_model_path(a.get_string("path")),
                                  [&](const ModelArgs& args) { return peft::build_lora_decoder(args, settings); });
        });
  }
}

}  // namespace tb::components
