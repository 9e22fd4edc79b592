// A Parquet file's rows as dataset rows (`source: parquet`, as Hugging Face datasets'
// load_dataset("parquet", data_files=...)): every column, row group after row group, each row named by
// its file and its 1-based row number, so a bad row is reported as `file:row: message`.
#pragma once

#include <string>
#include <vector>

#include "data/json_rows.h"

namespace tb::data {

// Throws ParquetError (data/parquet_reader.h), one line naming `display_name`, for a file it cannot read.
std::vector<Row> read_parquet_rows(const std::string& path, const std::string& display_name);

}  // namespace tb::data
