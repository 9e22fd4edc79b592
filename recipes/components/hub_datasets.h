// `source: org/name` in a dataset component, as torchtune passes it to Hugging Face's load_dataset: the
// dataset repo's snapshot in the shared Hugging Face cache, fetched on demand (only the files the config
// and split read; offline, the cache only), its files chosen as datasets chooses them
// (data/hub_dataset_layout.h: the card's configs, data_dir, data_files, default split patterns), read in
// their format (Parquet, JSON/JSONL, CSV/TSV, text). A repo that holds only a loading script is read from
// its refs/convert/parquet revision, where the Hub keeps a Parquet copy.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/row_stream.h"
#include "hub/download.h"

namespace tb::components {

// json, csv, text, parquet: files named by data_files; anything else names a Hub dataset repo.
bool is_local_format(const std::string& source);

struct HubDatasetRequest {
  std::string repo;         // org/name
  std::string config_name;  // `name:`; "" = the card's default
  std::string split = "train";  // a split name (slices are the caller's)
  std::string data_dir;
  std::vector<std::string> data_files;
};

using HubProgress = std::function<void(const std::string& repo, const hub::DownloadProgress&)>;

// The split's rows as a stream, in datasets' order. Throws std::invalid_argument / hub::HubError / data errors, one line.
// `field`: JSON files' records under that key.
std::unique_ptr<data::RowStream> open_hub_dataset(const HubDatasetRequest& request, std::optional<char> delimiter,
                                                  const std::string& field = {}, const HubProgress& progress = {},
                                                  const std::vector<std::string>& columns = {});

// What a Hub dataset offers and what one of its splits would download, without downloading it (the file
// list and the card only): the window's "From the Hub…" dataset dialog. Offline, from the cache.
struct HubDatasetInfo {
  std::string commit;
  bool converted = false;            // a script dataset, read from its refs/convert/parquet copy
  std::vector<std::string> configs;  // the card's configs (a converted copy: its folders); empty: one
  std::vector<std::string> splits;   // of the asked config
  std::vector<std::string> files;    // the asked split's, repo-relative
  int64_t bytes = 0;                 // theirs
  int64_t bytes_to_fetch = 0;        // not yet in the cache
};
HubDatasetInfo inspect_hub_dataset(const HubDatasetRequest& request);

// Fetches what the config's Hub datasets (dataset:, a map or a list of them) read, before the run builds
// them, so that its log can say what it waits for.
void fetch_config_datasets(const config::Config& cfg, const HubProgress& progress);

}  // namespace tb::components
