#include "config/open_quotes.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tb::config {

namespace {

// The offset of each line's first character in `text`.
std::vector<size_t> line_starts(const std::string& text) {
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts.push_back(i + 1);
  return starts;
}

// Where the quoted scalar opening at `open` ends (the offset of its closing quote), or npos when it runs
// to the end of the text. Double quotes escape with a backslash, single quotes by doubling.
size_t closing_quote(const std::string& text, size_t open) {
  const char quote = text[open];
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;
        continue;
      }
      return i;
    }
  }
  return std::string::npos;
}

// `  key: ...`, `- key:` or `key:` at the end of the line: what a line of a YAML map looks like.
bool reads_as_key(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return false;
  if (line.compare(i, 2, "- ") == 0) i = line.find_first_not_of(' ', i + 2);
  if (i == std::string::npos || !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_')) return false;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '.' || line[i] == '-')) ++i;
  return i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t' || line[i + 1] == '\r');
}

void walk(const Node& node, const std::string& path, const std::string& text, const std::vector<size_t>& starts,
          const std::string& file, std::vector<Diagnostic>& out) {
  for (size_t i = 0; i < node.children.size(); ++i) {
    const Node& child = node.children[i];
    walk(child, node.is_map() ? (path.empty() ? child.key : path + "." + child.key) : path + "[" + std::to_string(i) + "]",
         text, starts, file, out);
  }
  if (!node.is_scalar() || node.mark.line < 1 || size_t(node.mark.line) > starts.size() || !node.origin.empty()) return;
  const size_t open = starts[size_t(node.mark.line) - 1] + size_t(node.mark.column) - 1;
  if (open >= text.size() || (text[open] != '"' && text[open] != '\'')) return;
  const size_t close = closing_quote(text, open);
  const size_t end = close == std::string::npos ? text.size() : close;
  // The lines the value runs over, after its first: one that reads as `key: value` means a lost key.
  size_t line_start = text.find('\n', open);
  while (line_start != std::string::npos && line_start < end) {
    const size_t next = text.find('\n', line_start + 1);
    const std::string line = text.substr(line_start + 1, (next == std::string::npos ? text.size() : next) - line_start - 1);
    if (reads_as_key(line)) {
      const auto last_line = size_t(std::upper_bound(starts.begin(), starts.end(), end - (end == text.size() ? 1 : 0)) - starts.begin());
      std::ostringstream message;
      message << "the quoted value of '" << path << "' runs on to "
              << (close == std::string::npos ? "the end of the file" : "line " + std::to_string(last_line))
              << " and swallows the keys on the lines in between: is its closing " << (text[open] == '"' ? "\"" : "'")
              << " missing?";
      out.push_back({file, node.mark.line, node.mark.column, "", message.str()});
      return;
    }
    line_start = next;
  }
}

}  // namespace

std::vector<Diagnostic> open_quotes(const Node& root, const std::string& text, const std::string& file) {
  std::vector<Diagnostic> out;
  walk(root, "", text, line_starts(text), file, out);
  return out;
}

}  // namespace tb::config
