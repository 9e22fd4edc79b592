#include "data/parquet_rows.h"

#include <algorithm>

#include "data/parquet_reader.h"
#include "data/row_stream.h"

namespace tb::data {
namespace {

// One row group in memory at a time: the rows of the next are decoded when the last of these is taken.
class ParquetRowReader : public RowReader {
 public:
  ParquetRowReader(const std::string& path, std::string name, const std::vector<std::string>& columns)
      : file_(path, name), name_(std::move(name)) {
    for (const auto& c : columns)
      if (std::find(file_.columns().begin(), file_.columns().end(), c) != file_.columns().end()) columns_.push_back(c);
    // None of the asked columns: every column, so that the row says what it has.
    if (columns_.empty()) columns_ = file_.columns();
  }
  bool next(Row& row) override {
    while (at_ >= values_.size()) {
      if (group_ >= file_.num_row_groups()) return false;
      values_ = file_.read_row_group(group_++, columns_);
      at_ = 0;
    }
    row = Row{};
    row.value = std::move(values_[at_++]);
    row.file = name_;
    row.line = ++line_;
    return true;
  }
  // Rows stand in for bytes: the file's size spread evenly over its rows.
  uint64_t bytes_read() const override {
    return file_.num_rows() > 0 ? uint64_t(double(line_) / double(file_.num_rows()) * double(file_.size())) : 0;
  }
  int64_t known_rows() const override { return file_.num_rows(); }

 private:
  ParquetFile file_;
  std::string name_;
  std::vector<std::string> columns_;
  std::vector<nlohmann::ordered_json> values_;
  size_t at_ = 0, group_ = 0;
  int line_ = 0;
};

}  // namespace

std::unique_ptr<RowReader> open_parquet_rows(const std::string& path, const std::string& display_name,
                                             const std::vector<std::string>& columns) {
  return std::make_unique<ParquetRowReader>(path, display_name, columns);
}

std::vector<Row> read_parquet_rows(const std::string& path, const std::string& display_name) {
  auto reader = open_parquet_rows(path, display_name);
  std::vector<Row> rows;
  for (Row row; reader->next(row);) rows.push_back(std::move(row));
  return rows;
}

}  // namespace tb::data
