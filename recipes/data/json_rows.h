// Reading dataset files row by row, remembering where each row came from so that a bad row is
// reported as `file:line: message`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::data {

// Rows keep their keys in file order (ordered_json): a chat template prints dicts such as tool-call
// arguments in the order the data gave them, as Python would.
using RowJson = nlohmann::ordered_json;

// How deep a row's JSON may nest (arrays and objects in one another). Chat data nests a few levels
// (messages, content parts, tool calls); a row nested tens of thousands deep crashed the template renderer
// that walks it. Deeper is a bad row: `file:line: nested deeper than 64 levels`.
inline constexpr int kMaxRowDepth = 64;
// The most keys one object in a row may have (a CSV row: columns). Rows keep their keys in file order, and
// that map finds a key by looking through the ones before it: a row of a million keys took minutes. Chat
// and instruction data have a handful; more is a bad row: `file:line: an object with more than 1024 keys`.
inline constexpr size_t kMaxRowKeys = 1024;
// The longest line a text or JSONL row may be read from: a longer one is a bad row (reported at its line,
// or skipped with skip_bad_rows), read through without being held. Training keeps max_seq_len tokens of
// a row; 64 MiB of text is hundreds of times any context.
inline constexpr size_t kMaxRowBytes = size_t(64) << 20;

struct Row {
  RowJson value;
  std::string file;   // as the user named it
  int line = 0;       // 1-based line where the row starts
  std::string error;  // non-empty: the row could not be read (invalid JSON, wrong number of fields); value is null
};

// A JSON array of objects (one element a row) or JSON Lines (one object a line; blank lines skipped),
// told apart by the first non-blank character. A line or element that is not valid JSON becomes a row
// with `error` set (the dataset reports or skips it); a file that cannot be read, or an array whose
// brackets do not close, throws DataError.
std::vector<Row> read_json_rows(const std::string& path, const std::string& display_name);
// Records under one key of a JSON object ({"version": 1, "data": [...]}), as Hugging Face datasets'
// load_dataset("json", field="data") reads them; each row named by its place in that list.
std::vector<Row> read_json_field_rows(const std::string& path, const std::string& display_name, const std::string& field);
std::vector<Row> parse_json_rows(const std::string& text, const std::string& display_name);

// Plain text, one document a line (empty lines skipped): rows {"text": line}.
std::vector<Row> read_text_rows(const std::string& path, const std::string& display_name);

// Throws the row's DataError when it could not be read.
void require_readable(const Row& row);

// The string in column `column` of a row; DataError when it is missing or not a string. `allow_null`
// returns "" for a missing or null value instead.
std::string string_column(const Row& row, const std::string& column, bool allow_null = false);

}  // namespace tb::data
