#include "inference/data_preview.h"

#include <cstdio>
#include <stdexcept>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/chat_template.h"
#include "data/hf_tokenizer.h"
#include "data/open_tokenizer.h"
#include "data/tokenizer.h"

namespace tb::inference {

namespace {

DataPreview build_preview(const config::Config& config, const std::shared_ptr<data::Tokenizer>& tokenizer,
                          size_t max_samples, uint64_t max_rows) {
  data::DatasetContext context;
  context.tokenizer = tokenizer;
  context.max_rows = max_rows;
  const auto dataset = data::build_dataset(components::builtin(), config.at("dataset"), context);
  DataPreview p;
  p.description = dataset->description();
  const auto* hf = dynamic_cast<const data::HfTokenizer*>(tokenizer.get());
  if (hf && hf->chat_template()) {
    p.formatting = "the model's chat template (" + hf->chat_template()->origin() + ")";
  } else {
    const YAML::Node name = config.at("tokenizer")["_component_"];
    p.formatting = "the tokenizer's own formatting (" + (name.IsScalar() ? name.Scalar() : std::string("?")) + ")";
  }
  p.total_samples = dataset->size();
  p.stats = dataset->stats();
  p.warnings = p.stats.warnings();
  for (size_t i = 0; i < dataset->size() && i < max_samples; ++i) {
    const data::Sample s = dataset->get(i);
    const std::vector<std::string> pieces = data::token_pieces(*tokenizer, s.tokens);
    PreviewSample sample;
    for (size_t j = 0; j < s.tokens.size(); ++j) {
      PreviewToken t;
      t.id = s.tokens[j];
      t.text = pieces[j];
      // Labels are shifted: token j is learned where position j-1 predicts it.
      t.trained = j > 0 && j - 1 < s.labels.size() && s.labels[j - 1] != data::kIgnoreIndex;
      sample.trained += t.trained;
      sample.tokens.push_back(std::move(t));
    }
    p.samples.push_back(std::move(sample));
  }
  return p;
}

}  // namespace

DataPreview preview_dataset(const config::Config& config, size_t max_samples,
                            const std::function<void(const DataPreview&)>& first_rows) {
  const YAML::Node tokenizer_node = config.at("tokenizer");
  if (!tokenizer_node.IsDefined()) throw std::runtime_error("the config has no tokenizer");
  if (!config.at("dataset").IsDefined()) throw std::runtime_error("the config has no dataset");
  const auto tokenizer = components::builtin().build<std::shared_ptr<data::Tokenizer>>(tokenizer_node);
  if (!tokenizer) throw std::runtime_error("the tokenizer component built nothing");
  if (first_rows) {
    DataPreview first = build_preview(config, tokenizer, max_samples, kPreviewRows);
    if (!first.stats.row_limit_reached) return first;  // that was every row
    first_rows(first);
  }
  return build_preview(config, tokenizer, max_samples, 0);
}

namespace {

nlohmann::ordered_json counts_json(const DataPreview& p) {
  const auto& s = p.stats;
  nlohmann::ordered_json c = {{"samples", p.total_samples},
                              {"rows", s.rows},
                              {"tokens", s.tokens},
                              {"trained_tokens", s.trained_tokens},
                              {"masked_share", s.tokens ? 1.0 - double(s.trained_tokens) / double(s.tokens) : 0.0},
                              {"truncated", s.truncated},
                              {"bad_rows", s.bad_rows},
                              {"fully_masked", s.fully_masked}};
  if (!s.first_bad_row.empty()) c["first_bad_row"] = s.first_bad_row;
  if (!s.first_fully_masked.empty()) c["first_fully_masked"] = s.first_fully_masked;
  return c;
}

}  // namespace

nlohmann::ordered_json preview_json(const DataPreview& p) {
  nlohmann::ordered_json out = {{"dataset", p.description}, {"formatting", p.formatting}, {"counts", counts_json(p)}};
  out["warnings"] = p.warnings;
  auto samples = nlohmann::ordered_json::array();
  for (const auto& s : p.samples) {
    nlohmann::ordered_json sample = {{"tokens", s.tokens.size()}, {"trained", s.trained}};
    std::vector<int64_t> ids;
    std::vector<std::string> pieces;
    std::vector<bool> trained;
    for (const auto& t : s.tokens) {
      ids.push_back(t.id);
      pieces.push_back(t.text);
      trained.push_back(t.trained);
    }
    sample["ids"] = ids;
    sample["pieces"] = pieces;
    sample["trained_mask"] = trained;
    samples.push_back(std::move(sample));
  }
  out["samples"] = std::move(samples);
  return out;
}

std::string preview_counts_text(const DataPreview& p) {
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * counts_json(p)["masked_share"].get<double>());
  std::string out = p.stats.row_limit_reached ? "the first " + std::to_string(p.stats.rows) + " rows: " : "";
  out += "samples " + std::to_string(p.total_samples) + ", tokens " + std::to_string(p.stats.tokens) + " (" + share +
         " masked), truncated " + std::to_string(p.stats.truncated) + ", bad rows " + std::to_string(p.stats.bad_rows) +
         ", fully masked " + std::to_string(p.stats.fully_masked) + "\n";
  for (const auto& w : p.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string preview_text(const DataPreview& p, bool color) {
  std::string out = p.description + "\n";
  out += "formatting: " + p.formatting + "\n";
  out += preview_counts_text(p);
  const std::string open = color ? "\x1b[2m" : "\xE2\x9F\xA6", close = color ? "\x1b[0m" : "\xE2\x9F\xA7";
  out += color ? "(masked text dim)\n" : "(masked text between \xE2\x9F\xA6 and \xE2\x9F\xA7)\n";
  for (size_t i = 0; i < p.samples.size(); ++i) {
    const auto& s = p.samples[i];
    out += "--- sample " + std::to_string(i + 1) + ": " + std::to_string(s.tokens.size()) + " tokens, " +
           std::to_string(s.trained) + " trained\n";
    bool masked = false;
    for (const auto& t : s.tokens) {
      if (!t.trained && !masked) out += open;
      if (t.trained && masked) out += close;
      masked = !t.trained;
      out += t.text;
    }
    if (masked) out += close;
    out += "\n";
  }
  return out;
}

}  // namespace tb::inference
