#include "config/yaml_edit.h"

#include <algorithm>
#include <sstream>

#include "config/config.h"

namespace tb::config {
namespace {

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> keys;
  std::string key;
  std::istringstream in(dotted);
  while (std::getline(in, key, '.')) keys.push_back(key);
  if (keys.empty()) keys.push_back("");
  return keys;
}

YAML::Node undefined_node() {
  const YAML::Node empty(YAML::NodeType::Map);
  return empty["absent"];
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

YAML::Node child_of(const YAML::Node& n, const std::string& key) {
  if (n.IsMap()) {
    const YAML::Node& c = n;  // const lookup: never inserts
    return c[key];
  }
  if (n.IsSequence() && is_index(key) && std::stoul(key) < n.size()) return n[std::stoul(key)];
  return undefined_node();
}

void set_in(YAML::Node node, const std::vector<std::string>& keys, size_t i, const YAML::Node& value) {
  const std::string& key = keys[i];
  if (i + 1 == keys.size()) {
    node[key] = YAML::Clone(value);
    return;
  }
  if (!node[key].IsMap()) node[key] = YAML::Node(YAML::NodeType::Map);
  set_in(node[key], keys, i + 1, value);
}

}  // namespace

YAML::Node yaml_get(const YAML::Node& root, const std::string& dotted) {
  YAML::Node cur;
  cur.reset(root);
  for (const std::string& key : split_path(dotted)) {
    YAML::Node next = child_of(cur, key);
    if (!next.IsDefined()) return next;
    cur.reset(next);
  }
  return cur;
}

void yaml_set(YAML::Node& root, const std::string& dotted, const YAML::Node& value) {
  if (!root.IsMap()) root.reset(YAML::Node(YAML::NodeType::Map));
  set_in(root, split_path(dotted), 0, value);
}

void yaml_remove(YAML::Node& root, const std::string& dotted) {
  const size_t dot = dotted.rfind('.');
  YAML::Node parent = dot == std::string::npos ? root : yaml_get(root, dotted.substr(0, dot));
  if (parent.IsDefined() && parent.IsMap()) parent.remove(dot == std::string::npos ? dotted : dotted.substr(dot + 1));
}

bool yaml_same(const YAML::Node& a, const YAML::Node& b) {
  const bool a_null = !a.IsDefined() || a.IsNull(), b_null = !b.IsDefined() || b.IsNull();
  if (a_null || b_null) return a_null == b_null;
  if (a.Type() != b.Type()) return false;
  if (a.IsScalar()) return a.Scalar() == b.Scalar();
  if (a.size() != b.size()) return false;
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!yaml_same(a[i], b[i])) return false;
    return true;
  }
  for (auto it = a.begin(); it != a.end(); ++it) {
    const YAML::Node& cb = b;
    const YAML::Node other = cb[it->first.Scalar()];
    if (!other.IsDefined() || !yaml_same(it->second, other)) return false;
  }
  return true;
}

std::string yaml_flow(const YAML::Node& value) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetMapFormat(YAML::Flow);
  out.SetNullFormat(YAML::LowerNull);
  if (!value.IsDefined() || value.IsNull())
    out << YAML::Null;
  else
    out << value;
  return out.c_str();
}

// ---- text patching: small edits keep the user's comments and layout -------------------------------------

namespace {

struct Lines {
  std::vector<size_t> starts;  // offset of each line; one past the end as the last entry
  explicit Lines(const std::string& text) {
    starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
    if (starts.back() != text.size()) starts.push_back(text.size());
  }
  int count() const { return int(starts.size()) - 1; }
  size_t begin(int line) const { return starts[std::min<size_t>(line, starts.size() - 1)]; }
  size_t end(int line) const { return starts[std::min<size_t>(line + 1, starts.size() - 1)]; }
};

int indentation(const std::string& line) {
  int n = 0;
  while (n < int(line.size()) && line[n] == ' ') ++n;
  return n;
}

bool blankOrComment(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t\r\n");
  return first == std::string::npos || line[first] == '#';
}

// Where a plain or quoted scalar that starts at `start` ends on its line.
size_t scalarEnd(const std::string& text, size_t start, size_t lineEnd) {
  if (start >= lineEnd) return start;
  const char q = text[start];
  if (q == '"' || q == '\'') {
    for (size_t i = start + 1; i < lineEnd; ++i) {
      if (q == '"' && text[i] == '\\') {
        ++i;
        continue;
      }
      if (text[i] == q) {
        if (q == '\'' && i + 1 < lineEnd && text[i + 1] == '\'') {
          ++i;
          continue;
        }
        return i + 1;
      }
    }
    return std::string::npos;
  }
  if (q == '[' || q == '{') {
    const char close = q == '[' ? ']' : '}';
    int depth = 0;
    for (size_t i = start; i < lineEnd; ++i) {
      if (text[i] == q) ++depth;
      if (text[i] == close && --depth == 0) return i + 1;
    }
    return std::string::npos;
  }
  size_t end = start;
  for (size_t i = start; i < lineEnd; ++i) {
    if (text[i] == '#' && i > start && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
    if (text[i] == '\n' || text[i] == '\r') break;
    end = i + 1;
  }
  while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
  return end;
}

// A value as block YAML lines indented by `indent` (for a map inserted under a key).
std::string blockLines(const YAML::Node& value, int indent) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetNullFormat(YAML::LowerNull);
  out << value;
  std::string result;
  const std::string pad(indent, ' ');
  std::istringstream lines(out.c_str());
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) result += pad + line + "\n";
  return result;
}

// "key: value" lines for inserting `key` into a block map whose keys sit at column `indent`.
std::string keyLines(const std::string& key, const YAML::Node& value, int indent) {
  const std::string pad(indent, ' ');
  if (value.IsMap() && value.size() > 0) return pad + key + ":\n" + blockLines(value, indent + 2);
  return pad + key + ": " + yaml_flow(value) + "\n";
}

}  // namespace

bool patch_yaml_text(std::string& text, const YamlEdit& edit) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return false;
  }
  if (!doc.IsMap()) return false;
  const std::vector<std::string> keys = split_path(edit.path);
  // The deepest map on the path that exists; what is missing below it is inserted as one nested map.
  YAML::Node parent;
  parent.reset(doc);
  int depth = 0;
  while (depth + 1 < int(keys.size())) {
    YAML::Node next = yaml_get(parent, keys[depth]);
    if (!next.IsDefined() || !next.IsMap()) break;
    parent.reset(next);
    ++depth;
  }
  if (!parent.IsMap()) return false;
  const std::string leaf = keys[depth];
  YAML::Node value = YAML::Clone(edit.value);
  for (int i = int(keys.size()) - 1; i > depth; --i) {
    if (edit.remove) return true;  // removing below a missing map: nothing to do
    YAML::Node wrapper(YAML::NodeType::Map);
    wrapper[keys[i]] = value;
    value.reset(wrapper);
  }

  const Lines lines(text);
  auto lineText = [&](int l) { return text.substr(lines.begin(l), lines.end(l) - lines.begin(l)); };
  YAML::Node keyNode, valueNode;
  bool found = false;
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    if (it->first.Scalar() == leaf) {
      keyNode.reset(it->first);
      valueNode.reset(it->second);
      found = true;
      break;
    }
  }
  // Keys written in block style: only indentation (or a list dash) before them on their line.
  auto blockKeyAt = [&](const YAML::Mark& m) {
    if (m.line < 0 || m.line >= lines.count()) return false;
    const std::string l = lineText(m.line);
    if (int(l.size()) < m.column) return false;
    const std::string before = l.substr(0, m.column);
    return before.find_first_not_of(" -") == std::string::npos;
  };

  if (found) {
    const YAML::Mark km = keyNode.Mark();
    if (!blockKeyAt(km)) return false;
    // The key found is a non-map on the way to the leaf: nothing to remove, or a scalar to turn into a map.
    if (depth + 1 < int(keys.size())) return edit.remove;
    if (edit.remove) {
      int last = km.line;
      for (int l = km.line + 1; l < lines.count(); ++l) {
        const std::string lt = lineText(l);
        if (blankOrComment(lt)) continue;
        if (indentation(lt) <= km.column) break;
        last = l;
      }
      text.erase(lines.begin(km.line), lines.end(last) - lines.begin(km.line));
      return true;
    }
    if (value.IsMap() && value.size() > 0) return false;
    const YAML::Mark vm = valueNode.Mark();
    const size_t keyLineEnd = lines.end(km.line);
    // `key:` with nothing after it (null): put the value after the colon.
    const bool emptyValue = valueNode.IsNull() && (vm.line != km.line || vm.pos < 0 || size_t(vm.pos) >= keyLineEnd ||
                                                   text.compare(size_t(vm.pos), 1, "#") == 0);
    if (emptyValue) {
      const size_t keyStart = lines.begin(km.line) + km.column;
      size_t colon = text.find(':', keyStart + leaf.size());
      if (colon == std::string::npos || colon >= keyLineEnd) return false;
      text.insert(colon + 1, " " + yaml_flow(value));
      return true;
    }
    if (vm.line != km.line || valueNode.IsMap() || (valueNode.IsSequence() && text[vm.pos] != '['))
      return false;  // a block value
    const size_t start = size_t(vm.pos);
    const size_t end = scalarEnd(text, start, keyLineEnd);
    if (end == std::string::npos || end <= start) return false;
    text.replace(start, end - start, yaml_flow(value));
    return true;
  }

  if (edit.remove) return true;
  // Insert after the last line belonging to the map, at its keys' indentation.
  if (parent.size() == 0) return false;  // `{}`: regenerate
  int column = 0, lastLine = -1;
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    const YAML::Mark m = it->first.Mark();
    if (!blockKeyAt(m)) return false;
    column = m.column;
    lastLine = std::max(lastLine, m.line);
  }
  int last = lastLine;
  for (int l = lastLine + 1; l < lines.count(); ++l) {
    const std::string lt = lineText(l);
    if (blankOrComment(lt)) continue;
    if (indentation(lt) <= column) break;
    last = l;
  }
  size_t at = lines.end(last);
  std::string insertion = keyLines(leaf, value, column);
  if (at > 0 && text[at - 1] != '\n') insertion = "\n" + insertion;
  text.insert(at, insertion);
  return true;
}

std::string apply_yaml_edits(const std::string& text, YAML::Node& tree, const std::vector<YamlEdit>& edits) {
  std::string patched_text = text;
  bool patched = true;
  try {
    patched = YAML::Load(text).IsMap();
  } catch (const YAML::Exception&) {
    patched = false;
  }
  for (const YamlEdit& e : edits) {
    if (e.remove)
      yaml_remove(tree, e.path);
    else
      yaml_set(tree, e.path, e.value);
    if (patched) patched = patch_yaml_text(patched_text, e);
  }
  // The patched text must say exactly what the tree says; otherwise regenerate it from the tree.
  if (patched) {
    try {
      patched = yaml_same(YAML::Load(patched_text), tree);
    } catch (const YAML::Exception&) {
      patched = false;
    }
  }
  if (patched) return patched_text;
  // Keep the leading comment block; the rest comes from the tree.
  std::string header;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line) && line.rfind('#', 0) == 0;) header += line + "\n";
  Config c;
  c.root = tree;
  return header + c.to_yaml();
}

}  // namespace tb::config
