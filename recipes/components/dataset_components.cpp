// The dataset components (kind "dataset": builds tb::data::DatasetFactory, called with {tokenizer, model
// vocab size}): torchtune's builders over local files (json, csv, parquet, text) or a Hub dataset
// (`source: org/name`, components/hub_datasets.h), read as a stream of rows.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <cstdint>
#include <stdexcept>

#include "components/builtin.h"
#include "components/component_args.h"
#include "components/hub_datasets.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/hub_dataset_layout.h"
#include "data/row_sources.h"
#include "data/sft_datasets.h"
#include "data/text_datasets.h"

namespace tb::components {
namespace {

using namespace tb::data;
using config::arg;
using config::Args;
using config::ArgSpec;
using config::ArgType;
using config::ComponentSpec;

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

std::vector<ArgSpec> source_args(const char* default_source, bool source_required, const char* default_name = "null") {
  return {
      arg("source", ArgType::String,
          "json (JSON array or JSON Lines), csv (CSV/TSV with a header row), parquet or text (one document a line), "
          "or a Hub dataset (org/name: read from the Hugging Face cache, downloaded when missing and online)")
          .must_be_set(source_required)
          .or_default(default_source),
      arg("data_files", ArgType::Any, "a local file, a glob (data/train-*.parquet) or a list of them").or_null().or_default("null"),
      arg("split", ArgType::String,
          "the split, with Hugging Face's slicing (train[:95%], train[95%:], train[10:20]); local files have only 'train'")
          .or_default("train"),
      arg("name", ArgType::String, "a Hub dataset's config (its card's configs:); default: the card's default")
          .or_null()
          .or_default(default_name),
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
  std::vector<std::string> columns;  // the columns the dataset reads (a Parquet file reads only these)

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
    if (!is_local_format(source))
      return open_hub_dataset({source, name, split_name, data_dir, files}, delimiter, field, {}, columns);
    if (split_name != "train" && !split_name.empty())
      throw std::invalid_argument("split '" + split_name + "': local files have only the 'train' split");
    return open_rows(source, files, delimiter, field, columns);
  }
  DatasetOrigin origin(const std::string& component, const DatasetContext& ctx) const {
    return {component, files.empty() ? source : files_text(files), skip_bad_rows, ctx.max_rows};
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

// The file's columns a transform reads: each expected column as column_map renames it.
std::vector<std::string> mapped_columns(const std::map<std::string, std::string>& map, const std::vector<std::string>& expected) {
  std::vector<std::string> out;
  for (const auto& e : expected) out.push_back(map.count(e) ? map.at(e) : e);
  return out;
}

DatasetFactory sft_factory(const Args& args, const std::string& component, std::vector<std::string> columns,
                           MessageTransform transform) {
  RowSource source(args);
  source.columns = std::move(columns);
  const bool packed = args.get_bool("packed");
  return [=](const DatasetContext& ctx) -> std::shared_ptr<Dataset> {
    const Tokenizer& tok = need_tokenizer(ctx, component);
    const auto rows = source.open();
    auto ds = make_sft_dataset(*rows, transform, tok, source.origin(component, ctx));
    return maybe_pack(ds, packed, false, ctx, component);
  };
}

// torchtune's TextCompletionDataset over `column` of the source's rows (a text file's lines: "text").
DatasetFactory text_factory(const Args& a, RowSource source, const std::string& column, const std::string& component) {
  const std::string col = source.source == "text" ? "text" : column;
  source.columns = {col};
  const bool add_eos = a.get_bool("add_eos");
  const bool packed = a.get_bool("packed");
  const bool split_across = a.get_bool("split_across_pack");
  return [=](const DatasetContext& ctx) -> std::shared_ptr<Dataset> {
    const Tokenizer& tok = need_tokenizer(ctx, component);
    const auto rows = source.open();
    auto ds = make_text_completion_dataset(*rows, col, add_eos, tok, source.origin(component, ctx));
    return maybe_pack(ds, packed, split_across, ctx, component);
  };
}

std::vector<ArgSpec> text_args(std::vector<ArgSpec> args, const char* default_column) {
  args.push_back(arg("column", ArgType::String, "the column holding the text (not for source: text)").or_default(default_column));
  args.push_back(arg("add_eos", ArgType::Bool, "end each document with EOS").or_default("true"));
  args.push_back(arg("split_across_pack", ArgType::Bool, "when packing, cut documents at block ends").or_default("true"));
  return args;
}

// torchtune's input/output builders: instruct_dataset and the named ones that default to a Hub dataset and
// its columns (a column_map given replaces those defaults whole, as torchtune's `column_map or {...}`).
void register_input_output(config::Registry& registry, const char* name, const char* alias, const char* hub_source,
                           std::map<std::string, std::string> default_columns, const char* help) {
  auto args = source_args(hub_source, *hub_source == 0);
  args.push_back(arg("column_map", ArgType::Any, "input/output: the file's column names").or_null().or_default("null"));
  args.push_back(arg("train_on_input", ArgType::Bool, "the prompt counts in the loss").or_default("false"));
  args.push_back(arg("new_system_prompt", ArgType::String, "a system message put first").or_null().or_default("null"));
  registry.add<DatasetFactory>(dataset_spec(name, alias, args, help), [alias, default_columns](const Args& a) {
    InputOutputOptions o;
    o.column_map = column_map(a, {"input", "output"});
    if (o.column_map.empty()) o.column_map = default_columns;
    o.new_system_prompt = optional_string(a, "new_system_prompt");
    o.masking = masking_strategy(a.get_bool("train_on_input"), "");
    return sft_factory(a, alias, mapped_columns(o.column_map, {"input", "output"}),
                       [o](const Row& row) { return input_output_to_messages(row, o); });
  });
}

}  // namespace

void register_datasets(config::Registry& registry) {
  // torchtune's alpaca_dataset and alpaca_cleaned_dataset differ only in the Hub dataset they default to.
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
          return sft_factory(a, alias, mapped_columns(o.column_map, {"instruction", "input", "output"}),
                             [o](const Row& row) { return alpaca_to_messages(row, o); });
        });
  };
  register_alpaca("torchtune.datasets.alpaca_dataset", "alpaca_dataset", "tatsu-lab/alpaca");
  register_alpaca("torchtune.datasets.alpaca_cleaned_dataset", "alpaca_cleaned_dataset", "yahma/alpaca-cleaned");
  register_input_output(registry, "torchtune.datasets.instruct_dataset", "instruct_dataset", "", {},
                        "prompt/response rows (input, output) as one user and one assistant message");
  // The prompt templates these two had in torchtune are the tokenizer's (prompt_template:
  // torchtune.data.SummarizeTemplate / GrammarErrorCorrectionTemplate), as torchtune's configs set them.
  register_input_output(registry, "torchtune.datasets.samsum_dataset", "samsum_dataset", "Samsung/samsum",
                        {{"input", "dialogue"}, {"output", "summary"}},
                        "SAMSum-style dialogue summaries (dialogue -> summary)");
  register_input_output(registry, "torchtune.datasets.grammar_dataset", "grammar_dataset", "liweili/c4_200m", {},
                        "grammar correction pairs (input -> output)");
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
          return sft_factory(a, "chat_dataset", {o.conversation_column}, [o](const Row& row) { return chat_to_messages(row, o); });
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
                     "SlimOrca-style ShareGPT conversations"),
        [](const Args& a) {
          ChatOptions o;
          const auto columns = column_map(a, {"conversations"});
          o.conversation_column = columns.count("conversations") ? columns.at("conversations") : "conversations";
          o.conversation_style = "sharegpt";
          o.new_system_prompt = optional_string(a, "new_system_prompt");
          o.masking = masking_strategy(a.get_bool("train_on_input"), "");
          return sft_factory(a, "slimorca_dataset", {o.conversation_column},
                             [o](const Row& row) { return chat_to_messages(row, o); });
        });
  }
  registry.add<DatasetFactory>(
      dataset_spec("torchtune.datasets.text_completion_dataset", "text_completion_dataset", text_args(source_args("", true), "text"),
                   "free text: one document a line (text) or a column of rows (json, csv, parquet, a Hub dataset)"),
      [](const Args& a) { return text_factory(a, RowSource(a), a.get_string("column"), "text_completion_dataset"); });
  {
    // torchtune's wikitext_dataset names the Hub dataset's config `subset`.
    auto args = text_args(source_args("EleutherAI/wikitext_document_level", false), "page");
    args.push_back(arg("subset", ArgType::String, "the Hub dataset's config (as name:)").or_default("wikitext-103-v1"));
    registry.add<DatasetFactory>(
        dataset_spec("torchtune.datasets.wikitext_dataset", "wikitext_dataset", args, "Wikipedia articles as free text (page)"),
        [](const Args& a) {
          RowSource source(a);
          if (source.name.empty()) source.name = a.get_string("subset");
          return text_factory(a, source, a.get_string("column"), "wikitext_dataset");
        });
  }
  registry.add<DatasetFactory>(
      dataset_spec("torchtune.datasets.cnn_dailymail_articles_dataset", "cnn_dailymail_articles_dataset",
                   text_args(source_args("ccdv/cnn_dailymail", false, "3.0.0"), "article"),
                   "CNN / DailyMail news articles as free text (article; the highlights are not read)"),
      [](const Args& a) { return text_factory(a, RowSource(a), a.get_string("column"), "cnn_dailymail_articles_dataset"); });
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


}  // namespace tb::components
