// Command-line overrides, as torchtune's `tune run` applies them:
//   a.b=v        set a value, creating missing maps on the way; v is read as YAML (1e-4, true, null, [a,b]);
//                `None` means null, as in torchtune
//   a=[x,y]      lists (and maps: a={k: v} merges into an existing map, as OmegaConf merges)
//   model=name   when `model` holds a `_component_`, swaps the component and keeps its other arguments
//                (torchtune does this for top-level keys; we do it at any depth)
//   ~a.b         deletes a key; deleting a key that is not there is an error
// A value is split at the first '=' (OmegaConf), so `prompt=a=b` sets "a=b".
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/tree.h"

namespace tb::config {

// Applies `overrides` in order to `root` (a map). Problems go to `diags` as `override '...': message`.
void apply_overrides(Node& root, const std::vector<std::string>& overrides, std::vector<Diagnostic>& diags);

// A value as the right-hand side of an override reads it: YAML (1e-4, true, null, [a, b], {k: v}), `None`
// as null (torchtune). Throws std::invalid_argument "the value is not valid YAML: ...".
YAML::Node override_value(const std::string& value_text);

// One override taken apart as apply_overrides reads it (the window applies the command line's overrides
// as edits of its form with it). Throws std::invalid_argument with apply_overrides' message.
struct ParsedOverride {
  std::string key;      // dotted: optimizer.lr
  bool remove = false;  // ~key
  YAML::Node value;     // for key=value
};
ParsedOverride parse_override(const std::string& text);

// `text` as a YAML single-quoted scalar, for the value side of an override: a path holding ": " or
// " #" stays one string ("checkpointer.checkpoint_dir=" + yaml_quoted(dir)).
std::string yaml_quoted(const std::string& text);

// `items` as a YAML flow list of single-quoted scalars: ['a', 'b c'] (the value of a list override).
std::string yaml_flow_list(const std::vector<std::string>& items);

// Splits a dotted path ("a.b.0.c"); empty when it has an empty segment.
std::vector<std::string> split_dotted(const std::string& dotted);

}  // namespace tb::config
