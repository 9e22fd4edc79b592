// `tunebench-cli data preview` and the window's dataset preview: the config's tokenizer and dataset built
// as the recipe builds them, the first samples as the recipe will see them (each token's text and whether
// it is trained on), and the dataset's counts (samples, tokens, trained share, truncated, bad rows, fully
// masked rows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "data/dataset.h"

namespace tb::inference {

struct PreviewToken {
  std::string text;  // how it reads in the sample (special tokens written out)
  int64_t id = 0;
  bool trained = false;  // its label is predicted (not masked)
};

struct PreviewSample {
  std::vector<PreviewToken> tokens;
  size_t trained = 0;
};

struct DataPreview {
  std::string description;  // the dataset's one line
  std::string formatting;   // how conversations are formatted: the chat template's origin, or the tokenizer's own
  size_t total_samples = 0;
  data::DatasetStats stats;
  std::vector<std::string> warnings;  // stats.warnings()
  std::vector<PreviewSample> samples;
};

// Throws std::runtime_error (data::DataError for a bad row) with a one-line reason.
DataPreview preview_dataset(const config::Config& config, size_t max_samples);

// Counts and samples as one JSON object (for --json).
nlohmann::ordered_json preview_json(const DataPreview& preview);
// For a terminal: counts, then each sample's text with the masked runs marked (ANSI dim when `color`,
// else between ⟦ and ⟧).
std::string preview_text(const DataPreview& preview, bool color);

}  // namespace tb::inference
