// Which files of a Hugging Face Hub dataset repo snapshot `load_dataset(repo, name, split=...)` reads, and which
// rows a split expression such as "train[:95%]" or "test[:50%]+train[10:]" selects, following the rules of the
// Python `datasets` library (data_files.py, utils/metadata.py, load.py, arrow_reader.py) so that a run fed from a
// Hub snapshot sees the same examples a Python user would. Pure logic over a list of repo paths and the README
// text: no filesystem, no network, no torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb::data {

// One '+'-joined part of a split expression: "train", "train[:95%]", "train[-10:]", "train[:20%](pct1_dropremainder)".
// Bounds are integers as in datasets (absolute rows, or percents when `percent`); `rounding` applies to percents.
struct SplitSlice {
  std::string split;
  std::optional<int64_t> from, to;
  bool percent = false;
  std::string rounding = "closest";  // or "pct1_dropremainder"
};
struct SplitExpr {
  std::vector<SplitSlice> parts;  // '+' joins parts, read one after the other
};

// Parses a split expression; throws std::invalid_argument (one line naming the text) when datasets would refuse it.
SplitExpr parse_split(const std::string& text);

// [begin, end) of one slice over a split of `rows` rows, as datasets computes it: negative bounds count from the
// end, bounds clamp to [0, rows], percents round half to even ("closest") or use whole 1% blocks
// ("pct1_dropremainder", which refuses splits under 100 rows). begin may exceed end: the slice is then empty.
std::pair<int64_t, int64_t> slice_bounds(const SplitSlice& slice, int64_t rows);

enum class DataFormat { Parquet, Json, Csv, Text };

struct ResolvedSplit {
  std::vector<std::string> files;  // repo-relative paths, in the order datasets reads them
  DataFormat format;               // .parquet; .json/.jsonl/.ndjson; .csv/.tsv; .txt
};

// The files `load_dataset(repo_id, name=config_name, split=split, data_dir=..., data_files=...)` reads from a
// snapshot holding `repo_files` (repo-relative, '/'-separated), with `readme` the repo's README.md text ("" if
// none). config_name "" means the card's default config (default: true, else the only one, else "default"), or
// the default file patterns when the card has no `configs:`. `data_dir` / `data_files` override as in
// load_dataset; they are relative to the repo (data_files to data_dir when both are given) and data_files all
// go to the "train" split. `split` is a split name; a one-part split expression ("train[:10%]") is accepted
// and its split name used. Throws std::invalid_argument with one line naming what is missing and what exists.
ResolvedSplit resolve_dataset_split(const std::string& repo_id, const std::vector<std::string>& repo_files,
                                    const std::string& readme, const std::string& config_name,
                                    const std::string& split, const std::string& data_dir = {},
                                    const std::vector<std::string>& data_files = {});

// The split names the repo offers for that config, in datasets' order (throws as resolve_dataset_split does).
std::vector<std::string> dataset_splits(const std::string& repo_id, const std::vector<std::string>& repo_files,
                                        const std::string& readme, const std::string& config_name,
                                        const std::string& data_dir = {},
                                        const std::vector<std::string>& data_files = {});

// The config names of the card's `configs:` in card order (empty when the card declares none).
std::vector<std::string> dataset_config_names(const std::string& readme);

// fsspec-style glob over a '/'-separated path: '*', '?', '[...]' ('[!...]' negates) within one component,
// '**' as a whole component for any number of components. Exposed for tests.
bool hub_glob_match(const std::string& pattern, const std::string& path);

}  // namespace tb::data
