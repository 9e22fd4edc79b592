// `bench read`: how fast dataset files are read into rows (rows/s, MB/s of file), as a dataset build reads
// them (data/row_sources.h) but one file part at a time and without keeping the rows: for a Parquet file,
// row group by row group (scripts/bench_parquet.sh times DuckDB on the same file). Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::bench {

struct ReadBenchOptions {
  std::string source = "parquet";  // json, csv, text, parquet
  std::vector<std::string> files;
  std::vector<std::string> columns;  // parquet: only these (empty: all)
  int runs = 3;                      // timed runs after one warm-up; the median is reported
};

// {"bench": "read", "source", "files", "bytes", "rows", "runs", "median_s", "rows_per_s", "mb_per_s" (10^6 bytes),
//  "peak_rss_mb"}. Throws what reading throws.
nlohmann::json bench_read(const ReadBenchOptions& options);

}  // namespace tb::bench
