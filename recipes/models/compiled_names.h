// The one place that knows the compile wrapper's parameter prefix: a compiled model holds the
// original under `_orig_mod` (as torch.compile does), and every state-dict path strips it, so no
// checkpointer ever checks for it.
#pragma once

#include <string>

namespace tb::models {

inline constexpr const char* kCompiledPrefix = "_orig_mod.";

// `name` without any leading `_orig_mod.` (wrappers may nest).
inline std::string strip_compiled_prefix(std::string name) {
  const std::string prefix = kCompiledPrefix;
  while (name.compare(0, prefix.size(), prefix) == 0) name.erase(0, prefix.size());
  return name;
}

}  // namespace tb::models
