// A JSON document read from a file, with one wording of its errors for every reader of one (config.json,
// tokenizer files, manifests, adapter configs, recipe states, caches).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tb::text {

// Throws std::runtime_error "<path>: cannot open: <reason>" or "<path>: not valid JSON: <parser's words>".
nlohmann::json read_json_file(const std::string& path);

// The same, nullopt where read_json_file would throw (a file that may be absent, partial or stale).
std::optional<nlohmann::json> try_read_json_file(const std::string& path);

}  // namespace tb::text
