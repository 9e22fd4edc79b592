// `tunebench-cli data preview` and the window's dataset preview: the config's tokenizer and dataset built
// as the recipe builds them, the first samples as the recipe will see them (each token's text and whether
// it is trained on), and the dataset's counts (samples, tokens, trained share, truncated, bad rows, fully
// masked rows).
#pragma once

#include <cstdint>
#include <functional>
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

// How many rows a preview reads first (kPreviewRows of each source): the first samples are shown from them
// at once, whatever the dataset's size.
inline constexpr uint64_t kPreviewRows = 1000;

// Throws std::runtime_error (data::DataError for a bad row) with a one-line reason.
// With `first_rows`, the dataset is first built from its first kPreviewRows rows and, when it holds more,
// that preview (stats.row_limit_reached set, its counts those of the rows read) goes to `first_rows`
// before every row is read for the counts returned.
DataPreview preview_dataset(const config::Config& config, size_t max_samples,
                            const std::function<void(const DataPreview&)>& first_rows = {});

// Counts and samples as one JSON object (for --json).
nlohmann::ordered_json preview_json(const DataPreview& preview);
// For a terminal: counts, then each sample's text with the masked runs marked (ANSI dim when `color`,
// else between ⟦ and ⟧). A preview of the first rows says so in its counts line.
std::string preview_text(const DataPreview& preview, bool color);
// The counts line and the warnings alone (what follows a first-rows preview once every row is read).
std::string preview_counts_text(const DataPreview& preview);

}  // namespace tb::inference
