// Dataset rows one at a time. A dataset reads its files as a stream and keeps only the tokenized
// samples: a 5 GB file is never held as parsed rows. Each format has a reader (json_rows.h, csv_rows.h,
// parquet_rows.h); a RowStream strings the files of a dataset together and says how far it is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/json_rows.h"

namespace tb::data {

// The rows of one file, in order.
class RowReader {
 public:
  virtual ~RowReader() = default;
  // The next row into `row`; false at the end. A row that cannot be read comes back with `error` set; a
  // file that cannot be read at all throws (DataError / ParquetError).
  virtual bool next(Row& row) = 0;
  // How far the reader is through its file, in bytes of the file (an estimate for compressed formats).
  virtual uint64_t bytes_read() const = 0;
  // How many rows the file holds when that is known without reading them (a Parquet footer), else -1.
  virtual int64_t known_rows() const { return -1; }
};

// Rows already in memory (a JSON array, records under a `field:` key).
class RowVectorReader : public RowReader {
 public:
  RowVectorReader(std::vector<Row> rows, uint64_t file_bytes) : rows_(std::move(rows)), file_bytes_(file_bytes) {}
  bool next(Row& row) override;
  uint64_t bytes_read() const override;
  int64_t known_rows() const override { return int64_t(rows_.size()); }

 private:
  std::vector<Row> rows_;
  size_t at_ = 0;
  uint64_t file_bytes_;
};

// A reader for each format. They throw DataError (ParquetError) when the file cannot be opened.
// JSON Lines are read a line at a time; a JSON array, or records under a `field:` key, are parsed whole
// (one document), then handed out a row at a time.
std::unique_ptr<RowReader> open_json_rows(const std::string& path, const std::string& display_name,
                                          const std::string& field = {});
std::unique_ptr<RowReader> open_text_rows(const std::string& path, const std::string& display_name);
std::unique_ptr<RowReader> open_delimited_rows(const std::string& path, const std::string& display_name, char delimiter);
// `columns`: only these of the file's columns are read (those it lacks are left out); empty: every column.
std::unique_ptr<RowReader> open_parquet_rows(const std::string& path, const std::string& display_name,
                                             const std::vector<std::string>& columns = {});

// How far a stream of rows is: what the first pass over a large dataset reports.
struct ReadProgress {
  std::string files;        // what is read ("data/train.jsonl", "3 files")
  uint64_t rows = 0;        // rows read so far
  uint64_t bytes_read = 0;  // of bytes_total
  uint64_t bytes_total = 0;
  double seconds = 0;       // since the stream opened
  bool done = false;        // the last report of the stream
};
// "1,200,000 rows (45%), 310,000 rows/s, about 12 s left"
std::string read_progress_text(const ReadProgress& progress);

// Where progress goes on this thread while the scope lives (scopes nest; the run harness logs it, `data
// preview` prints it). A stream reports after each 64k rows once `interval` seconds have passed since its
// last report, and at its end when it took that long: a small dataset says nothing.
using ReadProgressSink = std::function<void(const ReadProgress&)>;
class ReadProgressScope {
 public:
  explicit ReadProgressScope(ReadProgressSink sink, double interval = 1.0);
  ~ReadProgressScope();
  ReadProgressScope(const ReadProgressScope&) = delete;
  ReadProgressScope& operator=(const ReadProgressScope&) = delete;

  void report(const ReadProgress& progress) const { sink_(progress); }
  double interval() const { return interval_; }

 private:
  const ReadProgressScope* previous_;
  ReadProgressSink sink_;
  double interval_;
};

// The rows of a dataset: local files in one format (see load_rows in row_sources.h), one after the other.
// Opens each file when the one before it ends; hears a stop (config::check_interrupt) between rows and
// reports its progress to the thread's ReadProgressScope.
class RowStream : public RowReader {
 public:
  using Opener = std::function<std::unique_ptr<RowReader>(const std::string& path, const std::string& display_name)>;
  // `paths` are opened as they are (resolved by the caller); `names` are what messages call them.
  RowStream(std::vector<std::string> paths, std::vector<std::string> names, Opener open);
  bool next(Row& row) override;
  uint64_t bytes_read() const override;
  // Rows in all the files: from the footers where the format keeps the count (Parquet), else by reading
  // them all once with a fresh stream of the same files. For slices counted from the end or in percent.
  int64_t count_rows() const;

 private:
  void report(bool done);

  std::vector<std::string> paths_, names_;
  Opener open_;
  size_t file_ = 0;
  std::unique_ptr<RowReader> reader_;
  uint64_t bytes_total_ = 0, bytes_before_ = 0;  // of all files; of the files already read
  uint64_t rows_ = 0;
  double start_ = 0, last_report_ = 0;
  bool reported_done_ = false;
};

// Rows [begin, end) of another reader (Hugging Face's split slicing: train[:95%], train[10:20]); the rows
// before `begin` are read and passed over, the reader is not read past `end`.
class SlicedRows : public RowReader {
 public:
  SlicedRows(std::unique_ptr<RowReader> rows, int64_t begin, int64_t end)
      : rows_(std::move(rows)), begin_(begin), end_(end) {}
  bool next(Row& row) override;
  uint64_t bytes_read() const override { return rows_->bytes_read(); }

 private:
  std::unique_ptr<RowReader> rows_;
  int64_t begin_, end_, at_ = 0;
};

// Readers one after the other, each opened when the one before ends ('+' in a split: train+test).
class ChainedRows : public RowReader {
 public:
  using Open = std::function<std::unique_ptr<RowReader>()>;
  explicit ChainedRows(std::vector<Open> parts) : parts_(std::move(parts)) {}
  bool next(Row& row) override;
  uint64_t bytes_read() const override { return bytes_before_ + (current_ ? current_->bytes_read() : 0); }

 private:
  std::vector<Open> parts_;
  size_t part_ = 0;
  std::unique_ptr<RowReader> current_;
  uint64_t bytes_before_ = 0;
};

}  // namespace tb::data
