#include "data/csv_rows.h"

#include <fstream>
#include <set>
#include <sstream>

#include "config/regular_file.h"
#include "data/dataset.h"
#include "text/strings.h"

namespace tb::data {
namespace {

struct Record {
  std::vector<std::string> fields;
  int line = 0;       // where it starts
  bool unterminated = false;
};

// Splits `text` into records. Scans once: a quote opens only at the start of a field; inside quotes
// the delimiter and newlines are data and "" is a quote.
std::vector<Record> split_records(const std::string& text, char delimiter) {
  std::vector<Record> records;
  Record current;
  std::string field;
  int line = 1;
  current.line = 1;
  bool in_quotes = false, field_started = false, quoted_field = false;
  auto end_field = [&] {
    current.fields.push_back(std::move(field));
    field.clear();
    field_started = quoted_field = false;
  };
  auto end_record = [&] {
    const bool blank = current.fields.empty() && field.empty() && !quoted_field;
    end_field();
    if (!blank) records.push_back(std::move(current));
    current = Record{};
    current.line = line;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      in_quotes = quoted_field = field_started = true;
    } else if (c == delimiter) {
      end_field();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      continue;  // CRLF: the \n ends the record
    } else if (c == '\n') {
      ++line;
      end_record();
    } else {
      field += c;
      field_started = true;
    }
  }
  if (in_quotes) current.unterminated = true;
  if (field_started || !current.fields.empty() || in_quotes) {
    current.fields.push_back(std::move(field));
    records.push_back(std::move(current));
  }
  return records;
}

}  // namespace

char delimiter_for(const std::string& path) {
  using text::ends_with;
  return ends_with(path, ".tsv") || ends_with(path, ".tab") || ends_with(path, ".TSV") ? '\t' : ',';
}

std::vector<Row> parse_delimited_rows(const std::string& text, const std::string& file, char delimiter) {
  std::string body = text;
  if (body.rfind("\xEF\xBB\xBF", 0) == 0) body.erase(0, 3);  // a UTF-8 byte order mark
  std::vector<Record> records = split_records(body, delimiter);
  std::vector<Row> rows;
  if (records.empty()) return rows;
  const Record& header = records.front();
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
  for (size_t r = 1; r < records.size(); ++r) {
    const Record& rec = records[r];
    Row row;
    row.file = file;
    row.line = rec.line;
    if (rec.unterminated) {
      row.error = "a quoted field is not closed before the end of the file";
    } else if (rec.fields.size() != header.fields.size()) {
      row.error = "expected " + std::to_string(header.fields.size()) + " fields (the header's), found " +
                  std::to_string(rec.fields.size());
    } else {
      row.value = RowJson::object();
      for (size_t c = 0; c < rec.fields.size(); ++c)
        row.value[header.fields[c]] = rec.fields[c].empty() ? RowJson() : RowJson(rec.fields[c]);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> read_delimited_rows(const std::string& path, const std::string& display_name, char delimiter) {
  if (const auto what = config::not_a_regular_file(path)) throw DataError(display_name, 0, *what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(display_name, 0, "cannot open data file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_delimited_rows(ss.str(), display_name, delimiter);
}

}  // namespace tb::data
