// Editing a YAML config as a person wrote it: dotted-path reads and writes on a raw tree (before
// interpolation), and edits patched into the text in place so that comments and layout survive. The
// window's config editor and form share one document through these; no Qt here.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tb::config {

// One change: set `path` (dotted, e.g. optimizer.lr; list items by index) to `value`, or remove it.
struct YamlEdit {
  std::string path;
  YAML::Node value;
  bool remove = false;
};

// The node at `dotted`; an invalid node (IsDefined() false) when absent. Never inserts.
YAML::Node yaml_get(const YAML::Node& root, const std::string& dotted);
// Sets `dotted` to a copy of `value`, creating the maps on the way (a non-map on the way is replaced).
void yaml_set(YAML::Node& root, const std::string& dotted, const YAML::Node& value);
// Removes `dotted` when its parent is a map that holds it.
void yaml_remove(YAML::Node& root, const std::string& dotted);
// Same values, maps compared without regard to key order; absent and null are the same.
bool yaml_same(const YAML::Node& a, const YAML::Node& b);
// A value as one line of YAML (flow style for lists and maps, `null` for null).
std::string yaml_flow(const YAML::Node& value);

// Applies one edit to `text` in place: a scalar or flow value replaced where it stands, a key removed
// with its block, a missing key inserted after its map's last line at the map's indentation. Returns
// false, leaving `text` in an unspecified state, for layouts it does not patch (flow maps, block
// values replaced by others, text that does not parse); the caller then regenerates the text.
bool patch_yaml_text(std::string& text, const YamlEdit& edit);

// `edits` applied to `tree`, and the text that says the same: `text` patched edit by edit when it
// parses and every patch applies and the result reads back as the new tree; else the tree emitted
// afresh after `text`'s leading comment block (`# recipe: ...`, a description).
std::string apply_yaml_edits(const std::string& text, YAML::Node& tree, const std::vector<YamlEdit>& edits);

}  // namespace tb::config
