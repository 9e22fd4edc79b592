#include "config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

#include "config/interpolation.h"
#include "config/open_quotes.h"
#include "config/overrides.h"
#include "config/registry.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "config/user_dirs.h"
#include "config/validate.h"
#include "config/regular_file.h"

namespace tb::config {
namespace {

// A const lookup that never inserts (yaml-cpp's non-const operator[] would).
YAML::Node child(const YAML::Node& n, const std::string& key) {
  if (n.IsMap()) return n[key];
  if (n.IsSequence() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
    size_t i = std::stoul(key);
    if (i < n.size()) return n[i];
  }
  const YAML::Node empty(YAML::NodeType::Map);
  return empty["absent"];
}

// "a.b[0].c" and "a.b.0.c" both name the same value.
std::vector<std::string> path_segments(const std::string& dotted) {
  std::string normalized;
  for (char c : dotted) {
    if (c == '[') normalized += '.';
    else if (c != ']') normalized += c;
  }
  return split_dotted(normalized);
}

void emit(YAML::Emitter& out, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out << YAML::Null;
      return;
    case YAML::NodeType::Scalar: {
      // A quoted "true" or "5" must stay a string when read back.
      bool string_typed = classify(n) == ScalarKind::String;
      if (string_typed && (n.Scalar().empty() || classify_plain(n.Scalar()) != ScalarKind::String))
        out << YAML::DoubleQuoted << n.Scalar();
      else
        out << n.Scalar();
      return;
    }
    case YAML::NodeType::Sequence: {
      bool flat = std::all_of(n.begin(), n.end(), [](const YAML::Node& c) { return !c.IsMap() && !c.IsSequence(); });
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& c : n) emit(out, c);
      out << YAML::EndSeq;
      return;
    }
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (auto it = n.begin(); it != n.end(); ++it) {
        out << YAML::Key << it->first.Scalar() << YAML::Value;
        emit(out, it->second);
      }
      out << YAML::EndMap;
      return;
  }
}

void record_sources(const Node& n, const std::string& path, const std::string& file,
                    std::map<std::string, Diagnostic>& out) {
  if (!path.empty()) out[path] = diagnostic_at(n, file, "");
  for (size_t i = 0; i < n.children.size(); ++i) {
    const Node& c = n.children[i];
    record_sources(c, path.empty() ? (n.is_map() ? c.key : std::to_string(i))
                                   : path + "." + (n.is_map() ? c.key : std::to_string(i)),
                   file, out);
  }
}

// File problems in file order, then override problems in the order the overrides were given.
void sort_diagnostics(std::vector<Diagnostic>& diags) {
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    bool ao = !a.override_text.empty(), bo = !b.override_text.empty();
    if (ao != bo) return !ao;
    if (ao) return false;
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
}

}  // namespace

std::string Diagnostic::format() const {
  if (!override_text.empty()) return "override '" + override_text + "': " + message;
  if (line > 0) return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
  return (file.empty() ? std::string("config") : file) + ": " + message;
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += d.format() + "\n";
  return out;
}

YAML::Node Config::at(const std::string& dotted) const {
  std::vector<std::string> segments = path_segments(dotted);
  if (segments.empty()) return child(YAML::Node(YAML::NodeType::Null), "");
  // reset(), not operator=: assigning one yaml-cpp node to another writes into the tree.
  YAML::Node cur;
  cur.reset(root);
  for (const std::string& s : segments) {
    YAML::Node next = child(cur, s);
    if (!next.IsDefined()) return next;  // reset() refuses an invalid node
    cur.reset(next);
  }
  return cur;
}

std::string Config::to_yaml() const {
  YAML::Emitter out;
  out.SetNullFormat(YAML::LowerNull);
  out.SetBoolFormat(YAML::TrueFalseBool);
  emit(out, root);
  return std::string(out.c_str()) + "\n";
}

int64_t Config::get_int(const std::string& dotted, int64_t fallback) const {
  YAML::Node v = at(dotted);
  if (!v.IsDefined() || !v.IsScalar()) return fallback;
  auto i = parse_int(v.Scalar());
  return i ? *i : fallback;
}

double Config::get_float(const std::string& dotted, double fallback) const {
  YAML::Node v = at(dotted);
  if (!v.IsDefined() || !v.IsScalar()) return fallback;
  auto f = parse_float(v.Scalar());
  return f ? *f : fallback;
}

bool Config::get_bool(const std::string& dotted, bool fallback) const {
  YAML::Node v = at(dotted);
  if (!v.IsDefined() || !v.IsScalar()) return fallback;
  auto b = parse_bool(v.Scalar());
  return b ? *b : fallback;
}

std::string Config::get_string(const std::string& dotted, const std::string& fallback) const {
  YAML::Node v = at(dotted);
  if (!v.IsDefined() || !v.IsScalar()) return fallback;
  return v.Scalar();
}

bool Config::has_component(const std::string& dotted) const {
  const YAML::Node node = at(dotted);
  return node.IsDefined() && node.IsMap();
}

Diagnostic Config::where(const std::string& dotted, const std::string& message) const {
  std::vector<std::string> segments = path_segments(dotted);
  // The value itself, else the nearest enclosing key that was written down.
  while (!segments.empty()) {
    std::string key;
    for (const std::string& s : segments) key += (key.empty() ? "" : ".") + s;
    auto it = sources.find(key);
    if (it != sources.end() && (it->second.line > 0 || !it->second.override_text.empty())) {
      Diagnostic d = it->second;
      d.message = message;
      return d;
    }
    segments.pop_back();
  }
  Diagnostic d;
  d.file = source_path;
  d.message = message;
  return d;
}

namespace {
// yaml-cpp's words for the usual slips, with what to look for: a bad indentation said only "illegal map
// value".
std::string yaml_error_text(const std::string& message) {
  std::string hint;
  if (message == "illegal map value")
    hint = "a second ': ' on one line (quote the value), or a line indented deeper than the key above it";
  else if (message == "end of map not found" || message == "end of map flow not found")
    hint = "a line indented differently from the keys beside it, or a '{' not closed";
  else if (message == "end of sequence not found" || message == "end of sequence flow not found")
    hint = "a list item indented differently from the others, or a '[' not closed";
  else if (message.find("tab") != std::string::npos)
    hint = "YAML indents with spaces, never tabs";
  return "YAML syntax error: " + message + (hint.empty() ? std::string() : " (" + hint + ")");
}
}  // namespace

LoadResult load_text(const std::string& text, const std::string& display_name, const LoadOptions& options) {
  LoadResult result;
  std::vector<Diagnostic>& diags = result.diagnostics;
  try {
    YAML::Node yaml;
    try {
      yaml.reset(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      diags.push_back({display_name, e.mark.line + 1, e.mark.column + 1, "", yaml_error_text(e.msg)});
      return result;
    }
    if (!yaml.IsDefined() || yaml.IsNull()) {
      diags.push_back({display_name, 0, 0, "", "the config is empty"});
      return result;
    }
    Node root = from_yaml(yaml, display_name, diags);
    // A missing closing quote explains every error after it (the keys it swallowed are "missing"): alone.
    if (auto open = open_quotes(root, text, display_name); !open.empty()) {
      diags = std::move(open);
      return result;
    }
    if (root.is_map()) {
      // An installed bundled config's relative output_dir (build/runs/...) means the user's runs folder.
      if (Node* out = root.find("output_dir"); out && out->is_scalar())
        if (const std::string moved = installed_runs_folder(display_name, out->text); !moved.empty()) out->text = moved;
      apply_overrides(root, options.overrides, diags);
    }
    resolve_interpolations(root, display_name, diags);
    validate_tree(root, options.recipe, options.registry, display_name, diags);
    sort_diagnostics(diags);
    if (!diags.empty()) return result;

    fill_defaults(root, options.recipe);
    Config config;
    config.root = to_yaml(root);
    config.source_path = display_name;
    config.recipe = options.recipe;
    record_sources(root, "", display_name, config.sources);
    result.config = std::move(config);
  } catch (const std::exception& e) {
    // A bug of ours, not of the config: still a diagnostic, never an escaping exception.
    diags.push_back({display_name, 0, 0, "", std::string("internal error while reading the config: ") + e.what()});
    result.config.reset();
  }
  return result;
}

LoadResult load_file(const std::string& name_or_path, const LoadOptions& options) {
  LoadResult result;
  std::string path = find_config(name_or_path);
  if (path.empty()) {
    if (const auto what = not_a_regular_file(name_or_path)) {  // e.g. a FIFO, which find_config skips
      result.diagnostics.push_back({name_or_path, 0, 0, "", *what});
      return result;
    }
    std::vector<std::string> names;
    for (const BundledConfig& b : bundled_configs()) names.push_back(b.name);
    result.diagnostics.push_back({name_or_path, 0, 0, "",
                                  "no such file or bundled config" + did_you_mean(name_or_path, names) +
                                      " (see 'tunebench-cli ls')"});
    return result;
  }
  std::ifstream in(path, std::ios::binary);  // find_config returns regular files only
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    result.diagnostics.push_back({path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(errno)});
    return result;
  }
  // A file the user named is shown as they wrote it; a bundled config by its real path.
  std::string shown = path == name_or_path ? name_or_path : path;
  return load_text(text.str(), shown, options);
}

}  // namespace tb::config
