#include "config/tree.h"

#include <algorithm>
#include <unordered_map>

namespace tb::config {
namespace {

SourceMark mark_of(const YAML::Node& y) {
  YAML::Mark m = y.Mark();
  if (m.line < 0 || m.column < 0) return {};
  return {m.line + 1, m.column + 1};
}

}  // namespace

ScalarKind Node::scalar_kind() const {
  if (kind == Kind::Null) return ScalarKind::Null;
  if (kind != Kind::Scalar) return ScalarKind::String;
  return classify(tag, text);
}

const Node* Node::find(const std::string& k) const {
  if (kind != Kind::Map) return nullptr;
  for (const Node& c : children)
    if (c.key == k) return &c;
  return nullptr;
}

Node* Node::find(const std::string& k) { return const_cast<Node*>(static_cast<const Node*>(this)->find(k)); }

bool Node::erase(const std::string& k) {
  auto it = std::find_if(children.begin(), children.end(), [&](const Node& c) { return c.key == k; });
  if (kind != Kind::Map || it == children.end()) return false;
  children.erase(it);
  return true;
}

Node& Node::add(const std::string& k, Node value) {
  value.key = k;
  children.push_back(std::move(value));
  return children.back();
}

std::vector<std::string> Node::keys() const {
  std::vector<std::string> out;
  if (kind == Kind::Map)
    for (const Node& c : children) out.push_back(c.key);
  return out;
}

void Node::assign_value(const Node& value) {
  std::string k = key;
  SourceMark km = key_mark;
  *this = value;
  key = std::move(k);
  key_mark = km;
}

void Node::set_origin(const std::string& override_text) {
  origin = override_text;
  for (Node& c : children) c.set_origin(override_text);
}

namespace {

// yaml-cpp shares an aliased node instead of copying it, so an alias can contain itself (`x: &a [*a]`)
// and nine levels of nine aliases name 387 million values: copying into our tree is bounded in depth
// and in size, and past either bound the copy stops with one error at the node where it happened.
constexpr int kMaxDepth = 100;
constexpr size_t kMaxNodes = 1'000'000;

struct CopyBudget {
  size_t nodes = 0;
  bool exceeded = false;
};

Node copy_yaml(const YAML::Node& y, const std::string& file, std::vector<Diagnostic>& diags, int depth,
               CopyBudget& budget) {
  Node n;
  n.mark = mark_of(y);
  n.tag = y.Tag();
  if (budget.exceeded) return n;  // Null: the error is already reported
  if (depth > kMaxDepth || ++budget.nodes > kMaxNodes) {
    budget.exceeded = true;
    diags.push_back({file, n.mark.line, n.mark.column, "",
                     depth > kMaxDepth
                         ? "nested more than " + std::to_string(kMaxDepth) + " levels deep (a YAML alias that contains itself?)"
                         : "more than " + std::to_string(kMaxNodes) + " values (YAML aliases that repeat each other?)"});
    return n;
  }
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      n.kind = Node::Kind::Null;
      break;
    case YAML::NodeType::Scalar:
      n.kind = Node::Kind::Scalar;
      n.text = y.Scalar();
      break;
    case YAML::NodeType::Sequence:
      n.kind = Node::Kind::Sequence;
      for (const auto& item : y) {
        n.children.push_back(copy_yaml(item, file, diags, depth + 1, budget));
        if (budget.exceeded) break;
      }
      break;
    case YAML::NodeType::Map: {
      n.kind = Node::Kind::Map;
      // Keys seen so far, by name: a linear find per key made 200k keys take minutes.
      std::unordered_map<std::string, size_t> seen;
      for (auto it = y.begin(); it != y.end() && !budget.exceeded; ++it) {
        SourceMark km = mark_of(it->first);
        if (!it->first.IsScalar()) {
          diags.push_back({file, km.line, km.column, "", "map keys must be plain names"});
          continue;
        }
        const std::string key = it->first.Scalar();
        if (const auto first = seen.find(key); first != seen.end()) {
          diags.push_back({file, km.line, km.column, "",
                           "duplicate key '" + key + "' (first set at line " +
                               std::to_string(n.children[first->second].key_mark.line) + ")"});
          continue;
        }
        Node child = copy_yaml(it->second, file, diags, depth + 1, budget);
        // An empty value (`key:` then a newline) carries the mark of whatever follows it: point at the key.
        if (child.is_null() && child.mark.line != km.line) child.mark = km;
        child.key_mark = km;
        seen.emplace(key, n.children.size());
        n.add(key, std::move(child));
      }
      break;
    }
  }
  return n;
}

}  // namespace

Node from_yaml(const YAML::Node& y, const std::string& file, std::vector<Diagnostic>& diags) {
  CopyBudget budget;
  return copy_yaml(y, file, diags, 0, budget);
}

YAML::Node to_yaml(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Null:
      return YAML::Node(YAML::NodeType::Null);
    case Node::Kind::Scalar: {
      YAML::Node y(n.text);
      if (!n.tag.empty() && n.tag != "?") y.SetTag(n.tag);
      return y;
    }
    case Node::Kind::Sequence: {
      YAML::Node y(YAML::NodeType::Sequence);
      for (const Node& c : n.children) y.push_back(to_yaml(c));
      return y;
    }
    case Node::Kind::Map: {
      YAML::Node y(YAML::NodeType::Map);
      for (const Node& c : n.children) y[c.key] = to_yaml(c);
      return y;
    }
  }
  return YAML::Node();
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string join_index(const std::string& parent, size_t index) { return parent + "[" + std::to_string(index) + "]"; }

Diagnostic diagnostic_at(const Node& n, const std::string& file, const std::string& message, bool at_key) {
  Diagnostic d;
  d.message = message;
  if (!n.origin.empty()) {
    d.override_text = n.origin;
    return d;
  }
  d.file = file;
  SourceMark m = at_key && n.key_mark.line > 0 ? n.key_mark : n.mark;
  if (m.line == 0) m = n.key_mark;
  d.line = m.line;
  d.column = m.column;
  return d;
}

}  // namespace tb::config
