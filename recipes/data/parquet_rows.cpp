#include "data/parquet_rows.h"

#include "config/interrupt.h"
#include "data/parquet_reader.h"

namespace tb::data {

std::vector<Row> read_parquet_rows(const std::string& path, const std::string& display_name) {
  ParquetFile file(path, display_name);
  std::vector<Row> rows;
  rows.reserve(size_t(std::max<int64_t>(0, std::min<int64_t>(file.num_rows(), int64_t(1) << 20))));
  int line = 0;
  for (size_t group = 0; group < file.num_row_groups(); ++group) {
    config::check_interrupt();  // a stop heard between row groups of a large file
    for (auto& value : file.read_row_group(group)) {
      Row row;
      row.value = std::move(value);
      row.file = display_name;
      row.line = ++line;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace tb::data
