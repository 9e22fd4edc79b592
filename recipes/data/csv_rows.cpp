#include "data/csv_rows.h"

#include <fstream>
#include <set>
#include <sstream>

#include "config/regular_file.h"
#include "data/dataset.h"
#include "data/row_stream.h"
#include "text/strings.h"

namespace tb::data {
namespace {

struct Record {
  std::vector<std::string> fields;
  int line = 0;       // where it starts
  bool unterminated = false;
};

// Records one at a time from a stream. A quote opens only at the start of a field; inside quotes the
// delimiter and newlines are data and "" is a quote.
class RecordSplitter {
 public:
  RecordSplitter(std::streambuf* in, char delimiter) : in_(in), delimiter_(delimiter) {}

  // The next record that is not blank; false at the end.
  bool next(Record& record) {
    record = Record{};
    record.line = line_;
    std::string field;
    bool in_quotes = false, field_started = false, quoted_field = false;
    const auto end_field = [&] {
      record.fields.push_back(std::move(field));
      field.clear();
      field_started = quoted_field = false;
    };
    for (int c = get(); c != kEnd; c = get()) {
      if (in_quotes) {
        if (c == '"') {
          if (in_->sgetc() == '"') {
            field += '"';
            get();
          } else {
            in_quotes = false;
          }
        } else {
          if (c == '\n') ++line_;
          field += char(c);
        }
        continue;
      }
      if (c == '"' && !field_started) {
        in_quotes = quoted_field = field_started = true;
      } else if (c == delimiter_) {
        end_field();
      } else if (c == '\r' && in_->sgetc() == '\n') {
        continue;  // CRLF: the \n ends the record
      } else if (c == '\n') {
        ++line_;
        const bool blank = record.fields.empty() && field.empty() && !quoted_field;
        if (blank) {
          record.line = line_;
          continue;
        }
        end_field();
        return true;
      } else {
        field += char(c);
        field_started = true;
      }
    }
    if (in_quotes) record.unterminated = true;
    if (field_started || !record.fields.empty() || in_quotes) {
      record.fields.push_back(std::move(field));
      return true;
    }
    return false;
  }
  uint64_t bytes_read() const { return bytes_; }

 private:
  int get() {
    ++bytes_;
    return in_->sbumpc();
  }
  static constexpr int kEnd = std::char_traits<char>::eof();
  std::streambuf* in_;
  char delimiter_;
  int line_ = 1;
  uint64_t bytes_ = 0;
};

// The header's column names, checked; DataError when they cannot name a row's keys.
std::vector<std::string> read_header(RecordSplitter& records, const std::string& file, bool& empty) {
  Record header;
  empty = !records.next(header);
  if (empty) return {};
  if (header.unterminated) throw DataError(file, header.line, "the header has an unterminated quote");
  if (header.fields.size() > kMaxRowKeys)
    throw DataError(file, header.line, "the header has " + std::to_string(header.fields.size()) + " columns, more than " +
                                           std::to_string(kMaxRowKeys) + " (a row keeps its columns in order, and so many "
                                           "make reading quadratic)");
  std::set<std::string> seen;
  for (size_t c = 0; c < header.fields.size(); ++c) {
    const std::string& name = header.fields[c];
    if (name.empty()) throw DataError(file, header.line, "column " + std::to_string(c + 1) + " has no name in the header");
    if (!seen.insert(name).second) throw DataError(file, header.line, "column '" + name + "' appears twice in the header");
  }
  return header.fields;
}

Row record_row(const Record& rec, const std::vector<std::string>& columns, const std::string& file) {
  Row row;
  row.file = file;
  row.line = rec.line;
  if (rec.unterminated) {
    row.error = "a quoted field is not closed before the end of the file";
  } else if (rec.fields.size() != columns.size()) {
    row.error = "expected " + std::to_string(columns.size()) + " fields (the header's), found " +
                std::to_string(rec.fields.size());
  } else {
    row.value = RowJson::object();
    for (size_t c = 0; c < rec.fields.size(); ++c)
      row.value[columns[c]] = rec.fields[c].empty() ? RowJson() : RowJson(rec.fields[c]);
  }
  return row;
}

// A delimited file read a record at a time (a byte order mark at the start passed over).
class DelimitedReader : public RowReader {
 public:
  DelimitedReader(std::unique_ptr<std::istream> in, std::string name, char delimiter)
      : in_(std::move(in)), name_(std::move(name)), records_(skip_bom(*in_), delimiter) {
    columns_ = read_header(records_, name_, empty_);
  }
  bool next(Row& row) override {
    Record rec;
    if (empty_ || !records_.next(rec)) return false;
    row = record_row(rec, columns_, name_);
    return true;
  }
  uint64_t bytes_read() const override { return records_.bytes_read(); }

 private:
  static std::streambuf* skip_bom(std::istream& in) {
    std::streambuf* buf = in.rdbuf();
    if (buf->sgetc() == 0xEF) {
      char bom[3];
      if (buf->sgetn(bom, 3) != 3 || std::string(bom, 3) != "\xEF\xBB\xBF") buf->pubseekpos(0);
    }
    return buf;
  }
  std::unique_ptr<std::istream> in_;
  std::string name_;
  RecordSplitter records_;
  std::vector<std::string> columns_;
  bool empty_ = false;
};

}  // namespace

char delimiter_for(const std::string& path) {
  using text::ends_with;
  return ends_with(path, ".tsv") || ends_with(path, ".tab") || ends_with(path, ".TSV") ? '\t' : ',';
}

std::vector<Row> parse_delimited_rows(const std::string& text, const std::string& file, char delimiter) {
  DelimitedReader reader(std::make_unique<std::istringstream>(text), file, delimiter);
  std::vector<Row> rows;
  for (Row row; reader.next(row);) rows.push_back(std::move(row));
  return rows;
}

std::unique_ptr<RowReader> open_delimited_rows(const std::string& path, const std::string& display_name, char delimiter) {
  if (const auto what = config::not_a_regular_file(path)) throw DataError(display_name, 0, *what);
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*in) throw DataError(display_name, 0, "cannot open data file");
  return std::make_unique<DelimitedReader>(std::move(in), display_name, delimiter);
}

std::vector<Row> read_delimited_rows(const std::string& path, const std::string& display_name, char delimiter) {
  auto reader = open_delimited_rows(path, display_name, delimiter);
  std::vector<Row> rows;
  for (Row row; reader->next(row);) rows.push_back(std::move(row));
  return rows;
}

}  // namespace tb::data
