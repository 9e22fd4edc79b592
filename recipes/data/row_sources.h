// Where dataset rows come from (local files in the formats people keep chat and instruction data in),
// and how a dataset walks them: a bad row stops the build with its file and line, or, when the user
// asked for skip_bad_rows, is counted and passed over.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/json_rows.h"
#include "data/row_stream.h"

namespace tb::data {

// The rows of local files, as Hugging Face `load_dataset(source, data_files=...)` names the formats:
//   json  a JSON array of objects or JSON Lines (.json, .jsonl)
//   csv   comma- or tab-separated with a header row (`delimiter`, default from the extension: .tsv is tab)
//   text  one document a line: rows {"text": line}
//   parquet  every column of each row (data/parquet_rows.h)
// `data_files` are local paths (see config::resolve_input_path), or glob patterns (`data/train-*.parquet`:
// the matches in name order). A Hub dataset name as source is refused with a message saying how to point
// at a local file. Throws std::invalid_argument / DataError / ParquetError.
// `field`: json only, the key of a top-level object whose list holds the records.
// The same rows as a stream, read as they are asked for (what datasets read: they keep only samples).
// `columns`: the columns the dataset reads; a columnar file (Parquet) reads only those.
std::unique_ptr<RowStream> open_rows(const std::string& source, const std::vector<std::string>& data_files,
                                     std::optional<char> delimiter = std::nullopt, const std::string& field = {},
                                     const std::vector<std::string>& columns = {});
std::vector<Row> load_rows(const std::string& source, const std::vector<std::string>& data_files,
                           const std::string& split = "train", std::optional<char> delimiter = std::nullopt,
                           const std::string& field = {});

// data_files with each glob pattern replaced by its matches, sorted; a pattern that matches nothing throws
// std::invalid_argument.
std::vector<std::string> expand_data_files(const std::vector<std::string>& data_files);

// Why `source` (with or without data_files) cannot be read here, or "": a Hub dataset name is something
// torchtune downloads; Tunebench reads local files only and says how to point at a local copy.
std::string local_source_problem(const std::string& source, bool has_data_files);

// Names a dataset in logs ("chat_dataset: 120 samples from data/chat.jsonl") and says what to do with bad rows.
struct DatasetOrigin {
  std::string component;  // e.g. "chat_dataset"
  std::string files;      // the data files, as the config named them
  bool skip_bad_rows = false;
  uint64_t max_rows = 0;  // read only this many rows (a preview's first rows); 0: all
};

// Calls `build` on every row of `rows` (counting them in stats.rows), or on the first origin.max_rows
// (stats.row_limit_reached set when it stopped there). A row that could not be read, or whose
// `build` throws, stops with a DataError naming the row's file and line; with skip_bad_rows it is counted
// in stats.bad_rows (the first message kept) and the walk goes on.
void for_each_row(RowReader& rows, const DatasetOrigin& origin, DatasetStats& stats,
                  const std::function<void(const Row&)>& build);

}  // namespace tb::data
