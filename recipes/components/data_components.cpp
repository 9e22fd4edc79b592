// The tokenizer components (kind "tokenizer": builds std::shared_ptr<tb::data::Tokenizer>); the datasets are
// in dataset_components.cpp.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "components/builtin.h"
#include "components/component_args.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/bpe_tokenizer.h"
#include "data/dataset.h"
#include "data/family_tokenizers.h"
#include "data/hf_tokenizer.h"
#include "data/json_rows.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/sft_datasets.h"
#include "hub/repo_path.h"

namespace tb::components {
namespace {

using namespace tb::data;
using config::arg;
using config::Args;
using config::ArgSpec;
using config::ArgType;
using config::ComponentSpec;
using TokenizerPtr = std::shared_ptr<Tokenizer>;

std::optional<PromptTemplate> prompt_template(const Args& args) {
  if (args.is_null("prompt_template")) return std::nullopt;
  const YAML::Node node = args.raw("prompt_template");
  try {
    if (node.IsScalar()) return PromptTemplate::from_name(node.Scalar());
    if (node.IsMap()) {
      std::map<std::string, std::pair<std::string, std::string>> tags;
      for (const auto& kv : node) {
        const YAML::Node v = kv.second;
        if (!v.IsSequence() || v.size() != 2) throw std::invalid_argument("each role needs [prepend, append]");
        tags[kv.first.as<std::string>()] = {v[0].as<std::string>(), v[1].as<std::string>()};
      }
      return PromptTemplate::custom(std::move(tags));
    }
  } catch (const std::exception& e) {
    throw arg_error(args, "prompt_template", e.what());
  }
  throw arg_error(args, "prompt_template", "must be null, a template name or a map role: [prepend, append]");
}

std::vector<ArgSpec> tokenizer_args(const char* default_template) {
  return {
      arg("path", ArgType::Path, "the tokenizer file").must_be_set(),
      arg("max_seq_len", ArgType::Int, "truncate tokenized samples to this many tokens").or_null().or_default("null"),
      arg("prompt_template", ArgType::Any,
          "tags around each role's text: a template name, a map role: [prepend, append], or null")
          .or_null()
          .or_default(default_template),
      arg("truncation_type", ArgType::String, "right: keep the first tokens; left: the last").or_default("right"),
  };
}

TokenizerPtr build_sentencepiece(const Args& args) {
  SentencePieceOptions o;
  o.max_seq_len = optional_int(args, "max_seq_len");
  o.prompt_template = prompt_template(args);
  o.truncation_type = args.get_string("truncation_type");
  return SentencePieceTokenizer::from_file(config::resolve_input_path(args.get_string("path")), o);
}

TokenizerPtr build_bpe(const Args& args, bool llama3) {
  BpeOptions o;
  o.max_seq_len = optional_int(args, "max_seq_len");
  o.prompt_template = prompt_template(args);
  o.truncation_type = args.get_string("truncation_type");
  if (llama3) {
    o.parse_special_tokens = false;  // torchtune's tiktoken tokenizer encodes special-token text as text
    o.require_llama3_tokens = true;
    if (const auto p = optional_string(args, "special_tokens_path")) o.special_tokens_path = config::resolve_input_path(*p);
  } else {
    o.parse_special_tokens = args.get_bool("parse_special_tokens");
    o.bos_token = optional_string(args, "bos_token").value_or("");
    o.eos_token = optional_string(args, "eos_token").value_or("");
    o.pad_token = optional_string(args, "pad_token").value_or("");
  }
  return BpeTokenizer::from_file(config::resolve_input_path(args.get_string("path")), o);
}

// torchtune's special_tokens_path: a tokenizer.json whose added_tokens replace `what`.
ArgSpec special_tokens_path_arg(const std::string& what) {
  return arg("special_tokens_path", ArgType::Path, "tokenizer.json whose added_tokens replace " + what)
      .or_null()
      .or_default("null");
}

FamilyTokenizerOptions family_options(const Args& args) {
  FamilyTokenizerOptions o;
  o.max_seq_len = optional_int(args, "max_seq_len");
  o.prompt_template = prompt_template(args);
  o.truncation_type = args.get_string("truncation_type");
  if (const auto p = optional_string(args, "special_tokens_path")) o.special_tokens = read_added_tokens(config::resolve_input_path(*p));
  return o;
}

// torchtune's vocab.json + merges.txt tokenizers name their two files differently per family.
std::vector<ArgSpec> vocab_merges_args(const char* vocab_key, const char* merges_key) {
  auto args = tokenizer_args("null");
  args[0] = arg(vocab_key, ArgType::Path, "vocab.json").must_be_set();
  args.insert(args.begin() + 1, arg(merges_key, ArgType::Path, "merges.txt").must_be_set());
  args.insert(args.begin() + 2, special_tokens_path_arg("the family's special tokens"));
  return args;
}

void register_family_tokenizers(config::Registry& registry) {
  const std::pair<const char*, QwenVersion> qwens[] = {
      {"qwen2", QwenVersion::Qwen2}, {"qwen2_5", QwenVersion::Qwen2_5}, {"qwen3", QwenVersion::Qwen3}};
  for (const auto& [family, version] : qwens) {
    const std::string name = std::string(family) + "_tokenizer";
    const QwenVersion v = version;
    registry.add<TokenizerPtr>(
        ComponentSpec{"tokenizer", "torchtune.models." + std::string(family) + "." + name, {name},
                      vocab_merges_args("path", "merges_file"),
                      "Qwen byte-level BPE (vocab.json + merges.txt) with ChatML turns, as torchtune formats them"},
        [v](const Args& a) {
          return make_qwen_tokenizer(v, config::resolve_input_path(a.get_string("path")),
                                     config::resolve_input_path(a.get_string("merges_file")), family_options(a));
        });
  }
  auto phi3_args = tokenizer_args("null");
  phi3_args.insert(phi3_args.begin() + 1, special_tokens_path_arg("Phi-3's special tokens"));
  registry.add<TokenizerPtr>(
      ComponentSpec{"tokenizer", "torchtune.models.phi3.phi3_mini_tokenizer", {"phi3_mini_tokenizer"}, phi3_args,
                    "Phi-3 mini SentencePiece tokenizer.model with <|user|> <|assistant|> <|end|> turns"},
      [](const Args& a) { return make_phi3_mini_tokenizer(config::resolve_input_path(a.get_string("path")), family_options(a)); });
  registry.add<TokenizerPtr>(
      ComponentSpec{"tokenizer", "torchtune.models.phi4.phi4_tokenizer", {"phi4_tokenizer"},
                    vocab_merges_args("vocab_path", "merges_path"),
                    "Phi-4 byte-level BPE (vocab.json + merges.txt) with <|im_start|>role<|im_sep|> turns"},
      [](const Args& a) {
        return make_phi4_tokenizer(config::resolve_input_path(a.get_string("vocab_path")),
                                   config::resolve_input_path(a.get_string("merges_path")), family_options(a));
      });
}

// YAML (a map of template variables) as JSON, scalars typed as YAML reads them.
nlohmann::ordered_json yaml_to_json(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  if (node.IsMap()) {
    auto out = nlohmann::ordered_json::object();
    for (const auto& kv : node) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return out;
  }
  const std::string s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: a string
  bool b;
  if (YAML::convert<bool>::decode(node, b)) return b;
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

TokenizerPtr build_hf(const Args& args) {
  HfTokenizerOptions o;
  o.max_seq_len = optional_int(args, "max_seq_len");
  o.prompt_template = prompt_template(args);
  o.truncation_type = args.get_string("truncation_type");
  o.parse_special_tokens = args.get_bool("parse_special_tokens");
  o.bos_token = optional_string(args, "bos_token").value_or("");
  o.eos_token = optional_string(args, "eos_token").value_or("");
  o.pad_token = optional_string(args, "pad_token").value_or("");
  o.chat_template = args.get_string("chat_template");
  if (o.chat_template != "auto" && o.chat_template != "none") o.chat_template = config::resolve_input_path(o.chat_template);
  if (!args.is_null("chat_template_kwargs")) {
    const YAML::Node kwargs = args.raw("chat_template_kwargs");
    if (!kwargs.IsMap()) throw arg_error(args, "chat_template_kwargs", "must be a map of variable: value");
    o.template_kwargs = yaml_to_json(kwargs);
  }
  return HfTokenizer::from_path(hub::resolve_model_path(args.get_string("path")), o);
}

void register_tokenizers(config::Registry& registry) {
  registry.add<TokenizerPtr>(ComponentSpec{"tokenizer",
                                           "torchtune.models.llama2.llama2_tokenizer",
                                           {"llama2_tokenizer"},
                                           tokenizer_args("torchtune.models.llama2.Llama2ChatTemplate"),
                                           "Llama 2 SentencePiece tokenizer.model (BOS 1, EOS 2, pad 0)"},
                             build_sentencepiece);
  registry.add<TokenizerPtr>(ComponentSpec{"tokenizer",
                                           "torchtune.models.mistral.mistral_tokenizer",
                                           {"mistral_tokenizer"},
                                           tokenizer_args("torchtune.models.mistral.MistralChatTemplate"),
                                           "Mistral SentencePiece tokenizer.model"},
                             build_sentencepiece);
  registry.add<TokenizerPtr>(ComponentSpec{"tokenizer",
                                           "torchtune.models.gemma.gemma_tokenizer",
                                           {"gemma_tokenizer"},
                                           tokenizer_args("null"),
                                           "Gemma SentencePiece tokenizer.model (its BOS, EOS from the model; pad 0)"},
                             build_sentencepiece);

  auto llama3_args = tokenizer_args("null");
  llama3_args.insert(llama3_args.begin() + 1, special_tokens_path_arg("the special tokens"));
  registry.add<TokenizerPtr>(
      ComponentSpec{"tokenizer",
                    "torchtune.models.llama3.llama3_tokenizer",
                    {"llama3_tokenizer"},
                    llama3_args,
                    "Llama 3 byte-level BPE: tokenizer.json or the original tiktoken tokenizer.model"},
      [](const Args& a) { return build_bpe(a, true); });

  auto hf_args = tokenizer_args("null");
  hf_args[0] = arg("path", ArgType::Path, "a model folder, or its tokenizer.json").must_be_set();
  hf_args.push_back(arg("chat_template", ArgType::String,
                        "auto: the model's own chat template (chat_template.jinja or tokenizer_config.json) when it "
                        "has one; none: torchtune's formatting; or a .jinja file")
                        .or_default("auto"));
  hf_args.push_back(arg("chat_template_kwargs", ArgType::Any,
                        "variables for the chat template, e.g. {enable_thinking: false}")
                        .or_null()
                        .or_default("null"));
  hf_args.push_back(
      arg("bos_token", ArgType::String, "BOS token text (default: the folder's)").or_null().or_default("null"));
  hf_args.push_back(
      arg("eos_token", ArgType::String, "EOS token text (default: the folder's)").or_null().or_default("null"));
  hf_args.push_back(arg("pad_token", ArgType::String, "padding token text (default: the folder's, else EOS)")
                        .or_null()
                        .or_default("null"));
  hf_args.push_back(arg("parse_special_tokens", ArgType::Bool, "added tokens written in the text become those tokens")
                        .or_default("true"));
  registry.add<TokenizerPtr>(
      ComponentSpec{"tokenizer",
                    "tunebench.data.hf_tokenizer",
                    {"hf_tokenizer"},
                    hf_args,
                    "a Hugging Face model folder's tokenizer (tokenizer.json, its special tokens, its chat template)"},
      build_hf);
}

}  // namespace

// torchtune's multimodal tokenizer transform and datasets: one line saying why, not "unknown component".
void register_multimodal_refusals(config::Registry& registry) {
  const std::string why = "multimodal (image + text) data; Tunebench trains text decoders only";
  registry.add<TokenizerPtr>(
      config::unsupported_component("tokenizer", "torchtune.models.llama3_2_vision.llama3_2_vision_transform",
                                    {"llama3_2_vision_transform"}, why),
      [](const Args&) -> TokenizerPtr { throw std::logic_error("unsupported component built"); });
  for (const char* name : {"the_cauldron_dataset", "llava_instruct_dataset", "vqa_dataset", "multimodal_chat_dataset"})
    registry.add<DatasetFactory>(
        config::unsupported_component("dataset", std::string("torchtune.datasets.multimodal.") + name, {name}, why),
        [](const Args&) -> DatasetFactory { throw std::logic_error("unsupported component built"); });
}

void register_data(config::Registry& registry) {
  register_tokenizers(registry);
  register_family_tokenizers(registry);
  register_datasets(registry);
  register_multimodal_refusals(registry);
}

}  // namespace tb::components
