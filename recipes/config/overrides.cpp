#include "config/overrides.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "config/suggest.h"

namespace tb::config {

std::string yaml_quoted(const std::string& text) {
  // Single quotes keep everything but line breaks, which YAML folds into spaces (a folder named with a
  // newline became another folder): text with a control character is double-quoted, escaped.
  const bool control = std::any_of(text.begin(), text.end(), [](char c) { return (c >= 0 && c < 0x20) || c == 0x7f; });
  if (!control) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if ((c >= 0 && c < 0x20) || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
std::string yaml_flow_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + yaml_quoted(items[i]);
  return out + "]";
}

namespace {

// An override as messages name it: whole up to 200 bytes, else its start and "...". Every node an
// override sets records it; a 100 KB list of 20,000 items once held 20,000 copies (4 GB).
std::string override_label(const std::string& text) {
  constexpr size_t kMax = 200;
  if (text.size() <= kMax) return text;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "...";
}

Diagnostic override_error(const std::string& text, const std::string& message) {
  Diagnostic d;
  d.override_text = override_label(text);
  d.message = message;
  return d;
}

bool is_index(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::string describe_node(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Null: return "null";
    case Node::Kind::Sequence: return "a list";
    case Node::Kind::Map: return "a map";
    case Node::Kind::Scalar: return std::string(describe(n.scalar_kind())) + " ('" + n.text + "')";
  }
  return "a value";
}

bool has_component(const Node& n) { return n.is_map() && n.find("_component_") != nullptr; }

// OmegaConf's merge: maps merge key by key, anything else replaces.
void merge_into(Node& target, const Node& value) {
  if (target.is_map() && value.is_map()) {
    for (const Node& c : value.children) {
      if (Node* existing = target.find(c.key))
        merge_into(*existing, c);
      else
        target.add(c.key, c);
    }
    return;
  }
  target.assign_value(value);
}

void remove_key(Node& root, const std::string& text, std::vector<Diagnostic>& diags) {
  std::string dotted = text.substr(1, text.find('=') == std::string::npos ? std::string::npos : text.find('=') - 1);
  std::vector<std::string> path = split_dotted(dotted);
  if (path.empty()) {
    diags.push_back(override_error(text, "expected ~key.path, e.g. ~optimizer.weight_decay"));
    return;
  }
  if (path.back() == "_component_") {
    diags.push_back(override_error(text, "a component's '_component_' cannot be removed on its own; remove the whole key (~" +
                                             dotted.substr(0, dotted.size() - std::string("._component_").size()) + ")"));
    return;
  }
  Node* node = &root;
  std::string walked;
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& seg = path[i];
    bool last = i + 1 == path.size();
    if (node->is_sequence() && is_index(seg)) {
      size_t idx = std::stoul(seg);
      if (idx >= node->children.size()) {
        diags.push_back(override_error(text, "'" + walked + "' has only " + std::to_string(node->children.size()) + " items"));
        return;
      }
      if (last) {
        node->children.erase(node->children.begin() + static_cast<long>(idx));
        return;
      }
      node = &node->children[idx];
    } else {
      Node* child = node->is_map() ? node->find(seg) : nullptr;
      if (!child) {
        std::string where = walked.empty() ? "the config" : "'" + walked + "'";
        diags.push_back(override_error(text, "cannot remove '" + dotted + "': " + where + " has no key '" + seg + "'" +
                                                 did_you_mean(seg, node->keys())));
        return;
      }
      if (last) {
        node->erase(seg);
        return;
      }
      node = child;
    }
    walked = walked.empty() ? seg : walked + "." + seg;
  }
}

void set_key(Node& root, const std::string& text, std::vector<Diagnostic>& diags) {
  size_t eq = text.find('=');
  std::string dotted = text.substr(0, eq);
  std::string value_text = text.substr(eq + 1);
  std::vector<std::string> path = split_dotted(dotted);
  if (path.empty()) {
    diags.push_back(override_error(text, "expected key=value with a dotted key such as optimizer.lr"));
    return;
  }
  Node value;
  try {
    std::vector<Diagnostic> parse_diags;
    value = from_yaml(override_value(value_text), "", parse_diags);
    if (!parse_diags.empty()) {
      diags.push_back(override_error(text, "the value is not valid: " + parse_diags.front().message));
      return;
    }
  } catch (const std::invalid_argument& e) {
    diags.push_back(override_error(text, e.what()));
    return;
  }
  const std::string label = override_label(text);
  value.set_origin(label);

  Node* node = &root;
  std::string walked;
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& seg = path[i];
    bool last = i + 1 == path.size();
    Node* child = nullptr;
    if (node->is_sequence()) {
      if (!is_index(seg) || std::stoul(seg) >= node->children.size()) {
        diags.push_back(override_error(text, "'" + walked + "' is a list of " + std::to_string(node->children.size()) +
                                                 " items; '" + seg + "' is not an index into it"));
        return;
      }
      child = &node->children[std::stoul(seg)];
    } else {
      if (node->is_null()) {  // null stands for "not set": it may become a map
        node->kind = Node::Kind::Map;
        node->text.clear();
        node->tag.clear();
      }
      if (!node->is_map()) {
        diags.push_back(override_error(text, "cannot set '" + dotted + "': '" + walked + "' is " + describe_node(*node) +
                                                 ", not a map"));
        return;
      }
      child = node->find(seg);
      if (!child) {
        Node fresh;
        fresh.kind = last ? Node::Kind::Null : Node::Kind::Map;
        fresh.origin = label;
        child = &node->add(seg, fresh);
      }
    }
    if (last) {
      // Swapping a component keeps its arguments; setting _component_ explicitly does the same.
      if (has_component(*child) && value.is_scalar()) {
        Node* component = child->find("_component_");
        component->assign_value(value);
        return;
      }
      merge_into(*child, value);
      return;
    }
    node = child;
    walked = walked.empty() ? seg : walked + "." + seg;
  }
}

}  // namespace

YAML::Node override_value(const std::string& value_text) {
  if (value_text == "None") return YAML::Node(YAML::NodeType::Null);  // torchtune turns None into null
  try {
    YAML::Node v = YAML::Load(value_text);
    return v.IsDefined() ? v : YAML::Node(YAML::NodeType::Null);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("the value is not valid YAML: " + e.msg);
  }
}

ParsedOverride parse_override(const std::string& text) {
  ParsedOverride out;
  const size_t eq = text.find('=');
  if (!text.empty() && text[0] == '~') {
    out.key = text.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
    out.remove = true;
    if (split_dotted(out.key).empty()) throw std::invalid_argument("expected ~key.path, e.g. ~optimizer.weight_decay");
    return out;
  }
  if (text.empty() || eq == std::string::npos)
    throw std::invalid_argument("expected key=value or ~key (e.g. optimizer.lr=1e-4, ~clip_grad_norm)");
  out.key = text.substr(0, eq);
  if (split_dotted(out.key).empty()) throw std::invalid_argument("expected key=value with a dotted key such as optimizer.lr");
  out.value = override_value(text.substr(eq + 1));
  return out;
}

std::vector<std::string> split_dotted(const std::string& dotted) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string seg = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (seg.empty()) return {};
    out.push_back(seg);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

void apply_overrides(Node& root, const std::vector<std::string>& overrides, std::vector<Diagnostic>& diags) {
  for (const std::string& text : overrides) {
    if (text.empty()) {
      diags.push_back(override_error(text, "empty override; expected key=value or ~key"));
    } else if (text[0] == '~') {
      remove_key(root, text, diags);
    } else if (text.find('=') == std::string::npos) {
      diags.push_back(override_error(text, "expected key=value or ~key (e.g. optimizer.lr=1e-4, ~clip_grad_norm)"));
    } else {
      set_key(root, text, diags);
    }
  }
}

}  // namespace tb::config
