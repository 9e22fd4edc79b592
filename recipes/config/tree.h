// The config as a tree that remembers where each value came from: its line and column in the file
// (1-based), or the command-line override that set it. Overrides, interpolation and validation work
// on this tree so every message can point at its source; the result becomes a plain YAML::Node.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/scalar.h"

namespace tb::config {

struct SourceMark {
  int line = 0;  // 1-based; 0 = unknown
  int column = 0;
};

struct Node {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string text;  // scalar text
  std::string tag;   // yaml-cpp tag: "?" plain, "!" quoted/block, or a core tag (tag:yaml.org,2002:str)
  std::vector<Node> children;  // sequence items, or map values in file order
  std::string key;             // for a map value: its key
  SourceMark key_mark;         // for a map value: where the key is
  SourceMark mark;             // where the value is
  std::string origin;          // the override text when an override set this value
  bool poisoned = false;       // an error was already reported here (interpolation): don't pile on

  bool is_map() const { return kind == Kind::Map; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_null() const { return kind == Kind::Null; }
  ScalarKind scalar_kind() const;  // Null for null nodes, String for containers

  const Node* find(const std::string& k) const;
  Node* find(const std::string& k);
  bool erase(const std::string& k);
  // Appends a map entry (no check for an existing key).
  Node& add(const std::string& k, Node value);
  std::vector<std::string> keys() const;

  // Assigns a value, keeping this node's key and key mark (a map entry stays where it is).
  void assign_value(const Node& value);
  // Marks this node and every node below it as set by `override_text`.
  void set_origin(const std::string& override_text);
};

// yaml-cpp node -> tree. Reports duplicate keys and non-scalar keys to `diags` with `file`.
Node from_yaml(const YAML::Node& y, const std::string& file, std::vector<Diagnostic>& diags);
YAML::Node to_yaml(const Node& n);

// Display paths as the user writes them: optimizer.lr, dataset[0].source.
std::string join_path(const std::string& parent, const std::string& key);
std::string join_index(const std::string& parent, size_t index);

// A diagnostic pointing at the value (or, with `at_key`, at the key) of `n`.
Diagnostic diagnostic_at(const Node& n, const std::string& file, const std::string& message, bool at_key = false);

}  // namespace tb::config
