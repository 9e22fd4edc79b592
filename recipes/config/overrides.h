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

#include "config/tree.h"

namespace tb::config {

// Applies `overrides` in order to `root` (a map). Problems go to `diags` as `override '...': message`.
void apply_overrides(Node& root, const std::vector<std::string>& overrides, std::vector<Diagnostic>& diags);

// `text` as a YAML single-quoted scalar, for the value side of an override: a path holding ": " or
// " #" stays one string ("checkpointer.checkpoint_dir=" + yaml_quoted(dir)).
std::string yaml_quoted(const std::string& text);

// Splits a dotted path ("a.b.0.c"); empty when it has an empty segment.
std::vector<std::string> split_dotted(const std::string& dotted);

}  // namespace tb::config
