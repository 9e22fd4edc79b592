// Reading dataset files row by row, remembering where each row came from so that a bad row is
// reported as `file:line: message`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::data {

struct Row {
  nlohmann::json value;
  std::string file;  // as the user named it
  int line = 0;      // 1-based line where the row starts
};

// A JSON array of objects (one element a row) or JSON Lines (one object a line; blank lines skipped),
// told apart by the first non-blank character. Throws DataError for unreadable files and invalid JSON.
std::vector<Row> read_json_rows(const std::string& path, const std::string& display_name);
std::vector<Row> parse_json_rows(const std::string& text, const std::string& display_name);

// Plain text, one document a line (empty lines skipped): rows {"text": line}.
std::vector<Row> read_text_rows(const std::string& path, const std::string& display_name);

// A local data file named in a config: absolute, relative to the working directory, or else relative to
// the share folder (config::share_dir(), which holds resources/). Returns the first that exists, or the
// path as given.
std::string resolve_data_path(const std::string& path);

// The string in column `column` of a row; DataError when it is missing or not a string. `allow_null`
// returns "" for a missing or null value instead.
std::string string_column(const Row& row, const std::string& column, bool allow_null = false);

}  // namespace tb::data
