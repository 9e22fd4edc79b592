// JSON text that never throws on bytes that are not UTF-8 (a folder name, a message quoting the
// input): they are written as U+FFFD, where nlohmann's dump() would throw type_error 316 and lose
// the log line, manifest or checkpoint being written.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tb::text {

template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tb::text
