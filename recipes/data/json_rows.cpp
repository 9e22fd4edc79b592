#include "data/json_rows.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "config/regular_file.h"
#include "data/dataset.h"
#include "data/row_stream.h"

namespace tb::data {
namespace {

using json = RowJson;

std::string read_all(const std::string& path, const std::string& display_name) {
  if (const auto what = config::not_a_regular_file(path)) throw DataError(display_name, 0, *what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(display_name, 0, "cannot open data file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int line_at(const std::string& text, size_t offset, int first_line) {
  int line = first_line;
  for (size_t i = 0; i < offset && i < text.size(); ++i)
    if (text[i] == '\n') ++line;
  return line;
}

// The row at `line` of `file` parsed from `text`; a syntax error makes it a bad row, located on the
// line the error falls on.
Row parse_row(const std::string& text, const std::string& file, int line) {
  Row row;
  row.file = file;
  row.line = line;
  // The parser says each value's depth and each key as it goes: a row nested too deep or an object with
  // too many keys stops there, before it is built.
  struct TooDeep {};
  struct TooManyKeys {};
  std::vector<size_t> keys;  // per open object
  const auto bounded = [&keys](int depth, json::parse_event_t event, json&) {
    if (depth > kMaxRowDepth) throw TooDeep{};
    if (event == json::parse_event_t::object_start) keys.push_back(0);
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && ++keys.back() > kMaxRowKeys) throw TooManyKeys{};
    return true;
  };
  try {
    row.value = json::parse(text, bounded);
  } catch (const TooDeep&) {
    row.value = nullptr;
    row.error = "nested deeper than " + std::to_string(kMaxRowDepth) + " levels (arrays or objects in one another)";
  } catch (const TooManyKeys&) {
    row.value = nullptr;
    row.error = "an object with more than " + std::to_string(kMaxRowKeys) + " keys";
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the problem; report the line it falls on.
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    const auto colon = what.find("syntax error");
    row.line = line_at(text, at, line);
    row.error = "invalid JSON: " + (colon != std::string::npos ? what.substr(colon) : what);
  }
  return row;
}

// The elements of a top-level JSON array as text slices with their first lines. Only strings and
// bracket depth need tracking; each element is then parsed on its own.
std::vector<Row> split_array(const std::string& text, const std::string& file, size_t open_bracket) {
  std::vector<Row> rows;
  int line = line_at(text, open_bracket, 1);
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t element_start = std::string::npos;
  int element_line = 0;
  auto finish = [&](size_t end) {
    if (element_start == std::string::npos) throw DataError(file, line, "invalid JSON: empty element in the array");
    rows.push_back(parse_row(text.substr(element_start, end - element_start), file, element_line));
    element_start = std::string::npos;
  };
  for (size_t i = open_bracket + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (!blank && element_start == std::string::npos && !(depth == 0 && (c == ',' || c == ']'))) {
      element_start = i;
      element_line = line;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (depth == 0 && c == ',') {
      finish(i);
    } else if (depth == 0 && c == ']') {
      if (element_start != std::string::npos) finish(i);
      for (size_t k = i + 1; k < text.size(); ++k) {
        if (text[k] == '\n') ++line;
        if (!(text[k] == ' ' || text[k] == '\t' || text[k] == '\r' || text[k] == '\n'))
          throw DataError(file, line, "invalid JSON: text after the closing ']'");
      }
      return rows;
    }
  }
  throw DataError(file, line, "invalid JSON: the array is not closed with ']'");
}

}  // namespace

std::vector<Row> parse_json_rows(const std::string& text, const std::string& file) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  if (text[first] == '[') return split_array(text, file, first);
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    rows.push_back(parse_row(line, file, line_no));
  }
  return rows;
}

std::vector<Row> read_json_rows(const std::string& path, const std::string& display_name) {
  return parse_json_rows(read_all(path, display_name), display_name);
}

std::vector<Row> read_json_field_rows(const std::string& path, const std::string& display_name, const std::string& field) {
  // The whole document, under the rows' limits (one level deeper: the records sit inside it).
  const Row doc = parse_row(read_all(path, display_name), display_name, 1);
  if (!doc.error.empty()) throw DataError(display_name, doc.line, doc.error);
  if (!doc.value.is_object()) throw DataError(display_name, 1, "field: '" + field + "' needs a JSON object at the top, with the records under that key");
  const auto records = doc.value.find(field);
  if (records == doc.value.end() || !records->is_array())
    throw DataError(display_name, 1, "field: no list of records under the key '" + field + "'");
  // Records are named by their place in that list ("data.json (field 'data'):5: ..."): the parser keeps no lines.
  std::vector<Row> rows;
  rows.reserve(records->size());
  int index = 0;
  for (const auto& value : *records) {
    Row row;
    row.value = value;
    row.file = display_name + " (field '" + field + "')";
    row.line = ++index;
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

std::ifstream open_data_file(const std::string& path, const std::string& display_name) {
  if (const auto what = config::not_a_regular_file(path)) throw DataError(display_name, 0, *what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(display_name, 0, "cannot open data file");
  return in;
}

std::string too_long_message() {
  return "the line is longer than " + config::byte_size_text(kMaxRowBytes) + " (not read)";
}

// A line at a time: a file is never held whole, and a line too long never at all.
class LineReader : public RowReader {
 public:
  LineReader(const std::string& path, std::string name, bool json)
      : in_(open_data_file(path, name)), name_(std::move(name)), json_(json) {}
  bool next(Row& row) override {
    bool too_long = false;
    while (config::read_bounded_line(in_, line_, kMaxRowBytes, too_long)) {
      ++line_no_;
      bytes_ += too_long ? kMaxRowBytes : line_.size() + 1;
      if (!too_long && line_.find_first_not_of(json_ ? " \t\r" : "") == std::string::npos) continue;
      if (json_ && !too_long) {
        row = parse_row(line_, name_, line_no_);
        return true;
      }
      row = Row{};
      row.file = name_;
      row.line = line_no_;
      if (too_long) row.error = too_long_message();
      else row.value = json{{"text", line_}};
      return true;
    }
    return false;
  }
  uint64_t bytes_read() const override { return bytes_; }

 private:
  std::ifstream in_;
  std::string name_;
  bool json_;
  std::string line_;
  int line_no_ = 0;
  uint64_t bytes_ = 0;
};

uint64_t size_of(std::ifstream& in) {
  const auto here = in.tellg();
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  in.seekg(here);
  return size < 0 ? 0 : uint64_t(size);
}

}  // namespace

std::unique_ptr<RowReader> open_text_rows(const std::string& path, const std::string& display_name) {
  return std::make_unique<LineReader>(path, display_name, false);
}

std::unique_ptr<RowReader> open_json_rows(const std::string& path, const std::string& display_name,
                                          const std::string& field) {
  std::ifstream in = open_data_file(path, display_name);
  const uint64_t size = size_of(in);
  if (!field.empty()) return std::make_unique<RowVectorReader>(read_json_field_rows(path, display_name, field), size);
  // JSON Lines or one array, told apart by the first character that is not blank.
  std::streambuf* buf = in.rdbuf();
  int c = buf->sgetc();
  while (c == ' ' || c == '\t' || c == '\r' || c == '\n') c = buf->snextc();
  if (c == '[') return std::make_unique<RowVectorReader>(read_json_rows(path, display_name), size);
  return std::make_unique<LineReader>(path, display_name, true);
}

std::vector<Row> read_text_rows(const std::string& path, const std::string& display_name) {
  std::vector<Row> rows;
  auto reader = open_text_rows(path, display_name);
  for (Row row; reader->next(row);) rows.push_back(std::move(row));
  return rows;
}

void require_readable(const Row& row) {
  if (!row.error.empty()) throw DataError(row.file, row.line, row.error);
}

std::string string_column(const Row& row, const std::string& column, bool allow_null) {
  require_readable(row);
  if (!row.value.is_object()) throw DataError(row.file, row.line, "a row must be a JSON object");
  const auto it = row.value.find(column);
  if (it == row.value.end() || it->is_null()) {
    if (allow_null) return {};
    std::string have;
    for (const auto& [key, _] : row.value.items()) have += (have.empty() ? "" : ", ") + key;
    throw DataError(row.file, row.line, "missing column '" + column + "' (the row has: " + (have.empty() ? "nothing" : have) + ")");
  }
  if (!it->is_string()) throw DataError(row.file, row.line, "column '" + column + "' is not a string");
  return it->get<std::string>();
}

}  // namespace tb::data
