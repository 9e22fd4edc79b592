// How a YAML scalar reads as a value, the way OmegaConf's loader reads it: YAML 1.1 booleans
// (true/yes/on ...), integers, floats including `1e-4` (which plain YAML 1.1 would keep as a string),
// and null. Quoted and block scalars, and `!!str`, are always strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace YAML {
class Node;
}

namespace tb::config {

enum class ScalarKind { Null, Bool, Int, Float, String };

// `text` as it reads when written plain (unquoted, untagged).
ScalarKind classify_plain(const std::string& text);
// A scalar with its yaml-cpp tag ("?" plain, "!" quoted or block, or a core tag such as
// tag:yaml.org,2002:str for `!!str`).
ScalarKind classify(const std::string& tag, const std::string& text);
// A yaml-cpp node's kind (null nodes included). Maps and sequences are not scalars: check those first.
ScalarKind classify(const YAML::Node& node);

std::optional<bool> parse_bool(const std::string& text);
std::optional<int64_t> parse_int(const std::string& text);
std::optional<double> parse_float(const std::string& text);

// What Python's str() gives for a value of this kind (True, None, 0.0001): OmegaConf inserts values
// into strings that way, e.g. "${lr}" inside "run_${lr}".
std::string python_str(const std::string& text, ScalarKind kind);

// A word for messages: "an integer", "a string", "null" ...
const char* describe(ScalarKind kind);

}  // namespace tb::config
