// Delimited text files (CSV, TSV) as dataset rows: the first record names the columns, each later
// record becomes a JSON object of strings. Quoting as RFC 4180: a field in double quotes may hold the
// delimiter, newlines and "" for a quote. An empty field is null (as Hugging Face `datasets` reads it).
#pragma once

#include <string>
#include <vector>

#include "data/json_rows.h"

namespace tb::data {

// The delimiter a file's name implies: '\t' for .tsv/.tab, else ','.
char delimiter_for(const std::string& path);

// Rows of `text`; a record with the wrong number of fields, or an unterminated quote, becomes a row with
// `error` set at the line it starts on. A missing or duplicate header name throws DataError.
std::vector<Row> parse_delimited_rows(const std::string& text, const std::string& display_name, char delimiter);
std::vector<Row> read_delimited_rows(const std::string& path, const std::string& display_name, char delimiter);

}  // namespace tb::data
