// What the component builders share to read their arguments: an error naming the component and argument,
// and optional arguments (null in the config: not set).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "config/registry.h"

namespace tb::components {

inline std::runtime_error arg_error(const config::Args& args, const std::string& name, const std::string& what) {
  return std::runtime_error(args.spec().name + ": " + name + ": " + what);
}

inline std::optional<int64_t> optional_int(const config::Args& args, const char* name) {
  if (args.is_null(name)) return std::nullopt;
  return args.get_int(name);
}

inline std::optional<std::string> optional_string(const config::Args& args, const char* name) {
  if (args.is_null(name)) return std::nullopt;
  return args.get_string(name);
}

}  // namespace tb::components
