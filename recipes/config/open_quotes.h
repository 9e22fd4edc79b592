// A quoted value whose closing quote is missing: YAML lets a quoted scalar run over lines, so
// `output_dir: "runs/x` swallows every key after it up to the next quote or the end of the file, and the
// config then reports the keys it lost as missing. This finds such values (a quoted scalar that runs
// over a line that reads like `key: value`) and says where the quote opened.
#pragma once

#include <string>
#include <vector>

#include "config/tree.h"
#include "config/config.h"

namespace tb::config {

// One diagnostic per quoted value of `root` (read from `text`) that runs on over `key:` lines.
std::vector<Diagnostic> open_quotes(const Node& root, const std::string& text, const std::string& file);

}  // namespace tb::config
