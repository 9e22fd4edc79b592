// Checks a config tree against the recipe schema and the component registry.
#pragma once

#include <string>
#include <vector>

#include "config/registry.h"
#include "config/tree.h"

namespace tb::config {

// `recipe` empty: every recipe's keys are accepted. `registry` nullptr: components are checked for
// their shape (a map with a `_component_` string) but not looked up.
void validate_tree(const Node& root, const std::string& recipe, const Registry* registry, const std::string& file,
                   std::vector<Diagnostic>& diags);

// Adds the schema's defaults for absent top-level keys (and num_threads when null), so recipes and the
// checkpoint manifest see every value that is in effect.
void fill_defaults(Node& root, const std::string& recipe);

}  // namespace tb::config
