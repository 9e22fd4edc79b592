// libFuzzer target: a dataset file's bytes read as JSON / JSON Lines rows (file:line errors are
// DataError), then each row's `text` column as the text dataset reads it; and the same bytes as CSV, by
// the streaming record reader.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "data/csv_rows.h"
#include "data/json_rows.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& row : tb::data::parse_json_rows(input, "fuzz.jsonl")) {
      try {
        (void)tb::data::string_column(row, "text");
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  try {
    for (const auto& row : tb::data::parse_delimited_rows(input, "fuzz.csv", ',')) (void)row.value.size();
  } catch (const std::exception&) {
  }
  return 0;
}
