// The tokenizer and dataset components.
//   kind "tokenizer": builds std::shared_ptr<tb::data::Tokenizer>
//   kind "dataset":   builds tb::data::DatasetFactory (call it with {tokenizer, model vocab size})
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "components/hub_datasets.h"
#include "data/bpe_tokenizer.h"
#include "data/family_tokenizers.h"
#include "data/hf_tokenizer.h"
#include "data/hub_dataset_layout.h"
#include "data/json_rows.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/row_sources.h"
#include "data/sft_datasets.h"
#include "data/text_datasets.h"
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

std::runtime_error arg_error(const Args& args, const std::string& name, const std::string& what) {
  return std::runtime_error(args.spec().name + ": " + name + ": " + what);
}

std::optional<int64_t> optional_int(const Args& args, const char* name) {
  if (args.is_null(name)) return std::nullopt;
  return args.get_int(name);
}

std::optional<std::string> optional_string(const Args& args, const char* name) {
  if (args.is_null(name)) return std::nullopt;
  return args.get_string(name);
}

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

// ---- datasets ----------------------------------------------------------------------------------------------

std::vector<std::string> data_files(const Args& args) {
  if (args.is_null("data_files")) return {};
  const YAML::Node node = args.raw("data_files");
  if (node.IsScalar()) return {node.Scalar()};
  if (node.IsSequence()) {
    std::vector<std::string> out;
    for (const auto& item : node) {
      if (!item.IsScalar()) throw arg_error(args, "data_files", "must be a path or a list of paths");
      out.push_back(item.Scalar());
    }
    return out;
  }
  throw arg_error(args, "data_files", "must be a path or a list of paths");
}

std::map<std::string, std::string> column_map(const Args& args, std::vector<std::string> allowed) {
  std::map<std::string, std::string> out;
  if (args.is_null("column_map")) return out;
  const YAML::Node node = args.raw("column_map");
  if (!node.IsMap()) throw arg_error(args, "column_map", "must be a map of expected column: column in the file");
  for (const auto& kv : node) {
    const auto key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw arg_error(args, "column_map", "unknown key '" + key + "' (expected: " + list + ")");
    }
    out[key] = kv.second.as<std::string>();
  }
  return out;
}

const Tokenizer& need_tokenizer(const DatasetContext& ctx, const std::string& component) {
  if (!ctx.tokenizer) throw std::runtime_error(component + " needs a tokenizer (the config's `tokenizer`)");
  return *ctx.tokenizer;
}

std::string files_text(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : ", ") + f;
  return out;
}

std::shared_ptr<Dataset> maybe_pack(std::shared_ptr<Dataset> ds, bool packed, bool split_across_pack,
                                    const DatasetContext& ctx, const std::string& component) {
  if (!packed) return ds;
  const Tokenizer& tok = *ctx.tokenizer;
  if (!tok.max_seq_len())
    throw std::runtime_error(component + ": packed: true needs a max_seq_len on the tokenizer (tokenizer.max_seq_len)");
  // Every pack is max_seq_len tokens wide, padded: wider than the model reads is memory spent on nothing
  // (100,000,000 on 17 tokens of data took 4.8 GB).
  constexpr int64_t kMaxPackTokens = int64_t(1) << 20;  // 8x the longest context of the families we train
  if (*tok.max_seq_len() > kMaxPackTokens)
    throw std::runtime_error(component + ": packed: tokenizer.max_seq_len " + std::to_string(*tok.max_seq_len()) +
                             " makes every pack that many tokens wide; packs are at most " +
                             std::to_string(kMaxPackTokens) + " (set tokenizer.max_seq_len to the model's context)");
  if (ctx.context > 0 && *tok.max_seq_len() > ctx.context)
    throw std::runtime_error(component + ": packed: tokenizer.max_seq_len " + std::to_string(*tok.max_seq_len()) +
                             " is longer than the model's context (" + std::to_string(ctx.context) +
                             " tokens) and every pack is that wide: set tokenizer.max_seq_len to at most " +
                             std::to_string(ctx.context));
  return pack_dataset(*ds, *tok.max_seq_len(), tok.pad_id(), split_across_pack);
}

std::vector<ArgSpec> source_args(const char* default_source, bool source_required) {
  return {
      arg("source", ArgType::String,
          "json (JSON array or JSON Lines), csv (CSV/TSV with a header row), parquet or text (one document a line); "
          "Hub names are not available offline")
          .must_be_set(source_required)
          .or_default(default_source),
      arg("data_files", ArgType::Any, "a local file, a glob (data/train-*.parquet) or a list of them").or_null().or_default("null"),
      arg("split", ArgType::String,
          "the split, with Hugging Face's slicing (train[:95%], train[95%:], train[10:20]); local files have only 'train'")
          .or_default("train"),
      arg("name", ArgType::String, "a Hub dataset's config (its card's configs:); default: the card's default").or_null().or_default("null"),
      arg("data_dir", ArgType::String, "a Hub dataset's folder to read (relative to the repo)").or_null().or_default("null"),
      arg("field", ArgType::String, "JSON: the key of a top-level object whose list holds the records").or_null().or_default("null"),
      arg("delimiter", ArgType::String, "source: csv: the field separator (default: tab for .tsv, else comma)")
          .or_null()
          .or_default("null"),
      arg("skip_bad_rows", ArgType::Bool,
          "skip rows that cannot be read or turned into a sample (counted and reported) instead of stopping")
          .or_default("false"),
      arg("packed", ArgType::Bool, "pack samples into tokenizer.max_seq_len blocks").or_default("false"),
  };
}

std::optional<char> delimiter(const Args& args) {
  const auto d = optional_string(args, "delimiter");
  if (!d) return std::nullopt;
  if (*d == "\\t" || *d == "tab") return '\t';
  if (d->size() != 1) throw arg_error(args, "delimiter", "must be one character (or \"\\t\" for tab), got '" + *d + "'");
  return (*d)[0];
}

// What the dataset components read from their source arguments.
struct RowSource {
  std::string source, split, name, data_dir, field;
  std::vector<std::string> files;
  std::optional<char> delimiter;
  bool skip_bad_rows = false;

  explicit RowSource(const Args& a)
      : source(a.get_string("source")),
        split(a.get_string("split")),
        name(optional_string(a, "name").value_or("")),
        data_dir(optional_string(a, "data_dir").value_or("")),
        field(optional_string(a, "field").value_or("")),
        files(data_files(a)),
        delimiter(tb::components::delimiter(a)),
        skip_bad_rows(a.get_bool("skip_bad_rows")) {}
  // The rows of the split expression, each part sliced as Hugging Face datasets slices it, one after the
  // other, read as the dataset asks for them. A slice counted from the end or in percent needs the split's
  // row count first (the Parquet footers, else a first pass over the files).
  std::unique_ptr<RowReader> open() const {
    std::vector<ChainedRows::Open> parts;
    for (const auto& part : data::parse_split(split).parts) {
      parts.push_back([self = *this, part]() -> std::unique_ptr<RowReader> {
        std::unique_ptr<RowStream> rows = self.open_split(part.split);
        if (!part.from && !part.to) return rows;
        const bool relative = part.percent || part.from.value_or(0) < 0 || part.to.value_or(0) < 0;
        const auto [begin, end] = data::slice_bounds(part, relative ? rows->count_rows() : INT64_MAX);
        return std::make_unique<SlicedRows>(std::move(rows), begin, end);
      });
    }
    return std::make_unique<ChainedRows>(std::move(parts));
  }
  std::unique_ptr<RowStream> open_split(const std::string& split_name) const {
    if (!is_local_format(source)) return open_hub_dataset({source, name, split_name, data_dir, files}, delimiter, field);
    if (split_name != "train" && !split_name.empty())
      throw std::invalid_argument("split '" + split_name + "': local files have only the 'train' split");
    return open_rows(source, files, delimiter, field);
  }
  DatasetOrigin origin(const std::string& component, const DatasetContext& ctx) const {
    return {component, files_text(files), skip_bad_rows, ctx.max_rows};
  }
};

config::ComponentSpec dataset_spec(const char* name, const char* alias, std::vector<ArgSpec> args, const char* help) {
  ComponentSpec spec{"dataset", name, {alias}, std::move(args), help};
  // A Hub dataset name (what torchtune's configs carry) is reported when the config is validated, not
  // after the model has loaded.
  const auto source_arg =
      std::find_if(spec.args.begin(), spec.args.end(), [](const ArgSpec& a) { return a.name == "source"; });
  if (source_arg == spec.args.end()) return spec;  // generated data
  const std::string default_source = source_arg->default_value;
  spec.check = [default_source](const YAML::Node& node, std::string* argument) {
    const YAML::Node source = node["source"], files = node["data_files"];
    const bool has_files = files && !files.IsNull() && !(files.IsSequence() && files.size() == 0);
    *argument = source ? "source" : "";
    const std::string named = source && source.IsScalar() ? source.Scalar() : default_source;
    if (!is_local_format(named)) return std::string();  // a Hub dataset: fetched and resolved when built
    return local_source_problem(named, has_files);
  };
  return spec;
}

DatasetFactory sft_factory(const Args& args, const std::string& component, MessageTransform transform) {
  const RowSource source(args);
  const bool packed = args.get_bool("packed");
  return [=](const DatasetContext& ctx) -> std::shared_ptr<Dataset> {
    const Tokenizer& tok = need_tokenizer(ctx, component);
    const auto rows = source.open();
    auto ds = make_sft_dataset(*rows, transform, tok, source.origin(component, ctx));
    return maybe_pack(ds, packed, false, ctx, component);
  };
}

void register_datasets(config::Registry& registry) {
  // torchtune's alpaca_dataset and alpaca_cleaned_dataset differ only in the Hub dataset they default to;
  // here both read a local copy (source: json, data_files: ...).
  const auto register_alpaca = [&](const char* name, const char* alias, const char* hub_source) {
    auto args = source_args(hub_source, false);
    args.push_back(arg("column_map", ArgType::Any, "instruction/input/output: the file's column names")
                       .or_null()
                       .or_default("null"));
    args.push_back(arg("train_on_input", ArgType::Bool, "the prompt counts in the loss").or_default("true"));
    registry.add<DatasetFactory>(
        dataset_spec(name, alias, args, "Alpaca instruct rows (instruction, input, output) with the Alpaca prompt"),
        [alias](const Args& a) {
          AlpacaOptions o;
          o.column_map = column_map(a, {"instruction", "input", "output"});
          o.masking = masking_strategy(a.get_bool("train_on_input"), "");
          return sft_factory(a, alias, [o](const Row& row) { return alpaca_to_messages(row, o); });
        });
  };
  register_alpaca("torchtune.datasets.alpaca_dataset", "alpaca_dataset", "tatsu-lab/alpaca");
  register_alpaca("torchtune.datasets.alpaca_cleaned_dataset", "alpaca_cleaned_dataset", "yahma/alpaca-cleaned");
  {
    auto args = source_args("", true);
    args.push_back(
        arg("column_map", ArgType::Any, "input/output: the file's column names").or_null().or_default("null"));
    args.push_back(arg("train_on_input", ArgType::Bool, "the prompt counts in the loss").or_default("false"));
    args.push_back(
        arg("new_system_prompt", ArgType::String, "a system message put first").or_null().or_default("null"));
    registry.add<DatasetFactory>(
        dataset_spec("torchtune.datasets.instruct_dataset", "instruct_dataset", args,
                     "prompt/response rows (input, output) as one user and one assistant message"),
        [](const Args& a) {
          InputOutputOptions o;
          o.column_map = column_map(a, {"input", "output"});
          o.new_system_prompt = optional_string(a, "new_system_prompt");
          o.masking = masking_strategy(a.get_bool("train_on_input"), "");
          return sft_factory(a, "instruct_dataset", [o](const Row& row) { return input_output_to_messages(row, o); });
        });
  }
  {
    auto args = source_args("", true);
    args.push_back(arg("conversation_column", ArgType::String, "the column holding the messages").must_be_set());
    args.push_back(
        arg("conversation_style", ArgType::String, "openai (role/content) or sharegpt (from/value)").must_be_set());
    args.push_back(arg("train_on_input", ArgType::Bool, "user messages count in the loss").or_default("false"));
    args.push_back(
        arg("new_system_prompt", ArgType::String, "replaces the rows' system messages").or_null().or_default("null"));
    registry.add<DatasetFactory>(
        dataset_spec("torchtune.datasets.chat_dataset", "chat_dataset", args,
                     "multi-turn conversations; only assistant turns are trained unless train_on_input"),
        [](const Args& a) {
          ChatOptions o;
          o.conversation_column = a.get_string("conversation_column");
          o.conversation_style = a.get_string("conversation_style");
          if (o.conversation_style != "openai" && o.conversation_style != "sharegpt")
            throw arg_error(a, "conversation_style", "must be openai or sharegpt, got '" + o.conversation_style + "'");
          o.new_system_prompt = optional_string(a, "new_system_prompt");
          o.masking = masking_strategy(a.get_bool("train_on_input"), "");
          return sft_factory(a, "chat_dataset", [o](const Row& row) { return chat_to_messages(row, o); });
        });
  }
  {
    // torchtune's slimorca_dataset: ShareGPT conversations ("conversations", from/value) of SlimOrca.
    auto args = source_args("Open-Orca/SlimOrca-Dedup", false);
    args.push_back(arg("column_map", ArgType::Any, "conversations: the file's column").or_null().or_default("null"));
    args.push_back(arg("train_on_input", ArgType::Bool, "the prompt counts in the loss").or_default("false"));
    args.push_back(
        arg("new_system_prompt", ArgType::String, "replaces the rows' system messages").or_null().or_default("null"));
    registry.add<DatasetFactory>(
        dataset_spec("torchtune.datasets.slimorca_dataset", "slimorca_dataset", args,
                     "SlimOrca-style ShareGPT conversations (a local copy)"),
        [](const Args& a) {
          ChatOptions o;
          const auto columns = column_map(a, {"conversations"});
          o.conversation_column = columns.count("conversations") ? columns.at("conversations") : "conversations";
          o.conversation_style = "sharegpt";
          o.new_system_prompt = optional_string(a, "new_system_prompt");
          o.masking = masking_strategy(a.get_bool("train_on_input"), "");
          return sft_factory(a, "slimorca_dataset", [o](const Row& row) { return chat_to_messages(row, o); });
        });
  }
  {
    auto args = source_args("", true);
    args.push_back(arg("column", ArgType::String, "the column holding the text (source: json)").or_default("text"));
    args.push_back(arg("add_eos", ArgType::Bool, "end each document with EOS").or_default("true"));
    args.push_back(
        arg("split_across_pack", ArgType::Bool, "when packing, cut documents at block ends").or_default("true"));
    registry.add<DatasetFactory>(
        dataset_spec("torchtune.datasets.text_completion_dataset", "text_completion_dataset", args,
                     "free text: one document a line (text) or a column of JSON rows (json)"),
        [](const Args& a) {
          const RowSource source(a);
          const std::string col = source.source == "text" ? "text" : a.get_string("column");
          const bool add_eos = a.get_bool("add_eos");
          const bool packed = a.get_bool("packed");
          const bool split_across = a.get_bool("split_across_pack");
          return DatasetFactory([=](const DatasetContext& ctx) -> std::shared_ptr<Dataset> {
            const Tokenizer& tok = need_tokenizer(ctx, "text_completion_dataset");
            const auto rows = source.open();
            auto ds = make_text_completion_dataset(*rows, col, add_eos, tok, source.origin("text_completion_dataset", ctx));
            return maybe_pack(ds, packed, split_across, ctx, "text_completion_dataset");
          });
        });
  }
  registry.add<DatasetFactory>(
      dataset_spec(
          "tunebench.datasets.synthetic", "synthetic",
          {arg("seq_len", ArgType::Int, "tokens per sample").or_default("256"),
           arg("num_samples", ArgType::Int, "samples per epoch").or_default("1000"),
           arg("seed", ArgType::Int, "the token ids depend only on this and the index").or_default("0"),
           arg("vocab_size", ArgType::Int, "ids are drawn below this; default: the model's, else the tokenizer's")
               .or_null()
               .or_default("null")},
          "seeded random token ids, every position trained (benchmarks)"),
      [](const Args& a) {
        const int64_t seq_len = a.get_int("seq_len");
        const int64_t num_samples = a.get_int("num_samples");
        const auto seed = static_cast<uint64_t>(a.get_int("seed"));
        const auto vocab = optional_int(a, "vocab_size");
        return DatasetFactory([=](const DatasetContext& ctx) -> std::shared_ptr<Dataset> {
          int64_t v = vocab.value_or(ctx.vocab_size);
          if (v <= 0 && ctx.tokenizer) v = ctx.tokenizer->vocab_size();
          if (v <= 0)
            throw std::runtime_error(
                "synthetic: no vocabulary size (set dataset.vocab_size, or build a model or tokenizer)");
          return std::make_shared<SyntheticDataset>(seq_len, num_samples, seed, v);
        });
      });
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
