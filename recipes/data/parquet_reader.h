// Parquet files as dataset rows: one JSON object per row, with nested lists and structs rebuilt from
// the repetition and definition levels (Dremel), so a chat column `messages: list<struct<role, content>>`
// reads as [{"role": .., "content": ..}, ..]. Hub datasets ship as Parquet, and this reads them without
// Arrow: the footer is parsed here (parquet_thrift.h), the pages decoded by parquet_pages.h.
// Memory follows what is asked: one row group at a time and only the column chunks of the asked
// columns, each read at its offset; nothing a header claims is allocated before the bytes are there.
// Every problem is a ParquetError of one line, "<file>: <what is wrong>". MAP columns are not supported.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/parquet_thrift.h"

namespace tb::data {

struct ParquetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ParquetFile {
 public:
  // Opens `path` and reads its footer; errors name the file as `display_name` (the path when empty).
  explicit ParquetFile(const std::string& path, const std::string& display_name = {});
  ~ParquetFile();
  ParquetFile(const ParquetFile&) = delete;
  ParquetFile& operator=(const ParquetFile&) = delete;

  // The top-level column names, in schema order.
  const std::vector<std::string>& columns() const { return columns_; }
  int64_t num_rows() const { return meta_.num_rows; }
  uint64_t size() const { return size_; }  // of the file, in bytes
  size_t num_row_groups() const { return meta_.row_groups.size(); }
  int64_t row_group_rows(size_t index) const;

  // The rows of row group `index`, each an object of the asked top-level columns (all when `columns`
  // is empty) in schema order. An unknown column name is an error.
  std::vector<nlohmann::ordered_json> read_row_group(size_t index, const std::vector<std::string>& columns = {});

  struct Node;  // the schema tree (defined in the .cpp)

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::vector<uint8_t> read_at(uint64_t offset, uint64_t size);

  std::string path_;
  std::string name_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t data_end_ = 0;  // where the footer starts: no column chunk reaches past it
  parquet::FileMetaData meta_;
  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::vector<int> leaves_;  // node index of each leaf column, in column-chunk order
  std::vector<std::string> columns_;
};

}  // namespace tb::data
