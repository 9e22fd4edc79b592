#include "bench/read_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "data/parquet_reader.h"
#include "data/row_sources.h"

namespace tb::bench {

namespace {

// Rows read, none kept: Parquet row group by row group, other formats file by file.
int64_t read_once(const ReadBenchOptions& o, const std::vector<std::string>& files) {
  int64_t rows = 0;
  for (const auto& f : files) {
    if (o.source == "parquet") {
      data::ParquetFile file(f);
      for (size_t g = 0; g < file.num_row_groups(); ++g) rows += int64_t(file.read_row_group(g, o.columns).size());
    } else {
      const auto stream = data::open_rows(o.source, {f});  // a row at a time: none held
      for (data::Row row; stream->next(row);) ++rows;
    }
  }
  return rows;
}

}  // namespace

nlohmann::json bench_read(const ReadBenchOptions& o) {
  const std::vector<std::string> files = data::expand_data_files(o.files);
  uint64_t bytes = 0;
  for (const auto& f : files) bytes += std::filesystem::file_size(f);
  int64_t rows = read_once(o, files);  // warm-up: the page cache holds the files from here on
  std::vector<double> seconds;
  for (int run = 0; run < std::max(1, o.runs); ++run) {
    const auto start = std::chrono::steady_clock::now();
    rows = read_once(o, files);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {{"bench", "read"},         {"source", o.source},
          {"files", files.size()},   {"bytes", bytes},
          {"rows", rows},            {"runs", seconds.size()},
          {"median_s", median},      {"rows_per_s", double(rows) / median},
          {"mb_per_s", double(bytes) / 1e6 / median}, {"peak_rss_mb", double(usage.ru_maxrss) / 1024.0}};
}

}  // namespace tb::bench
