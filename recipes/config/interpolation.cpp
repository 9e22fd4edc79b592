#include "config/interpolation.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

#include "config/suggest.h"

namespace tb::config {
namespace {

bool has_interpolation(const Node& n) { return n.is_scalar() && n.text.find("${") != std::string::npos; }

// A problem found while resolving a value. `report_at` is where it is reported: nullptr = the value whose
// own text is at fault; a node on the resolution stack = the start of a cycle. `silent` = a value this one
// depends on failed and has already been reported.
struct InterpolationError : std::runtime_error {
  explicit InterpolationError(const std::string& m, const Node* at = nullptr, bool quiet = false)
      : std::runtime_error(m), report_at(at), silent(quiet) {}
  const Node* report_at;
  bool silent;
};

// Bounds on what interpolation may build: each reference can double a value, so forty of them would
// otherwise ask for a terabyte.
constexpr size_t kMaxInterpolatedBytes = size_t(1) << 20;
constexpr size_t kMaxCopiedNodes = 1'000'000;

size_t count_nodes(const Node& n) {
  size_t count = 1;
  for (const Node& c : n.children) count += count_nodes(c);
  return count;
}

class Resolver {
 public:
  Resolver(Node& root, const std::string& file, std::vector<Diagnostic>& diags) : root_(root), file_(file), diags_(diags) {
    index_parents(root_, nullptr);
  }

  void resolve_all(Node& n) {
    if (done_.count(&n)) return;
    if (n.is_scalar()) {
      resolve_scalar(n);
      return;
    }
    for (Node& c : n.children) resolve_all(c);
  }

 private:
  void index_parents(Node& n, Node* parent) {
    parent_[&n] = parent;
    for (Node& c : n.children) index_parents(c, &n);
  }

  Node* parent_of(const Node* n) const {
    auto it = parent_.find(n);
    return it == parent_.end() ? nullptr : it->second;
  }

  std::string path_of(const Node* n) const {
    std::string out;
    for (const Node* cur = n; cur && cur != &root_; cur = parent_of(cur)) {
      const Node* parent = parent_of(cur);
      if (parent && parent->is_sequence())
        out = "[" + std::to_string(cur - parent->children.data()) + "]" + out;
      else
        out = cur->key + (out.empty() || out[0] == '[' ? "" : ".") + out;
    }
    return out;
  }

  // Resolves one scalar in place; false when it (or something it refers to) has an error.
  bool resolve_scalar(Node& n) {
    if (done_.count(&n)) return !n.poisoned;
    if (!has_interpolation(n)) {
      done_.insert(&n);
      return true;
    }
    auto on_stack = std::find(stack_.begin(), stack_.end(), &n);
    if (on_stack != stack_.end()) {
      std::string chain;
      for (auto it = on_stack; it != stack_.end(); ++it) chain += path_of(*it) + " -> ";
      throw InterpolationError("circular interpolation: " + chain + path_of(&n), &n);
    }
    stack_.push_back(&n);
    try {
      Node result = evaluate(n);
      n.assign_value(result);
      stack_.pop_back();
      done_.insert(&n);
      return true;
    } catch (const InterpolationError& e) {
      stack_.pop_back();
      n.poisoned = true;
      done_.insert(&n);
      bool report_here = !e.silent && (e.report_at == nullptr || e.report_at == &n);
      if (!e.silent && !report_here) throw;  // part of a cycle that started further out
      if (report_here) diags_.push_back(diagnostic_at(n, file_, e.what()));
      if (!stack_.empty()) throw InterpolationError("", nullptr, true);
      return false;
    }
  }

  // Resolves every scalar below `n` (before a map or list is copied).
  void resolve_subtree(Node& n) {
    if (n.is_scalar()) {
      if (!resolve_scalar(n)) throw InterpolationError("", nullptr, true);
      return;
    }
    for (Node& c : n.children) resolve_subtree(c);
  }

  Node evaluate(Node& n) {
    const std::string& text = n.text;
    // Exactly one `${...}` spanning the whole value keeps the referenced value's type.
    if (text.compare(0, 2, "${") == 0 && matching_brace(text, 2) == text.size() - 1) {
      Node value = lookup(text.substr(2, text.size() - 3), n);
      copied_nodes_ += count_nodes(value);
      if (copied_nodes_ > kMaxCopiedNodes)
        throw InterpolationError("interpolation copies more than " + std::to_string(kMaxCopiedNodes) +
                                 " values (references that copy each other's lists or maps grow without bound)");
      value.mark = n.mark;  // later messages about this value point at the reference
      value.origin = n.origin;
      return value;
    }
    Node result;
    result.kind = Node::Kind::Scalar;
    result.text = expand_string(text, n);
    result.tag = "!";  // a string interpolation is always a string
    result.mark = n.mark;
    result.origin = n.origin;
    return result;
  }

  std::string expand_string(const std::string& text, Node& context) {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      if (text.compare(pos, 3, "\\${") == 0) {
        out += "${";
        pos += 3;
      } else if (text.compare(pos, 2, "${") == 0) {
        size_t end = matching_brace(text, pos + 2);
        Node value = lookup(text.substr(pos + 2, end - pos - 2), context);
        if (value.is_map() || value.is_sequence())
          throw InterpolationError("'" + text.substr(pos, end - pos + 1) + "' is a " + (value.is_map() ? "map" : "list") +
                                   " and cannot be part of a string");
        out += python_str(value.text, value.scalar_kind());
        if (out.size() > kMaxInterpolatedBytes)
          throw InterpolationError("the value grows past " + std::to_string(kMaxInterpolatedBytes >> 20) +
                                   " MiB when interpolated (references that repeat each other grow without bound)");
        pos = end + 1;
      } else {
        out += text[pos++];
      }
    }
    return out;
  }

  // Index of the `}` closing a `${` whose body starts at `start`.
  static size_t matching_brace(const std::string& text, size_t start) {
    int depth = 1;
    for (size_t i = start; i < text.size(); ++i) {
      if (text.compare(i, 2, "${") == 0) {
        ++depth;
        ++i;
      } else if (text[i] == '}' && --depth == 0) {
        return i;
      }
    }
    throw InterpolationError("unterminated interpolation in '" + text + "' (missing '}')");
  }

  // The value a reference body names, resolved. Nested references in the body expand first (${a.${b}}).
  Node lookup(const std::string& raw_body, Node& context) {
    const std::string shown = "${" + raw_body + "}";
    const std::string body = raw_body.find("${") == std::string::npos ? raw_body : expand_string(raw_body, context);
    if (body.empty()) throw InterpolationError("empty interpolation '${}'");
    size_t colon = body.find(':');
    if (colon != std::string::npos) return resolver_value(body.substr(0, colon), body.substr(colon + 1), shown);

    // Relative references: one leading dot is the node's own container, each further dot one level up.
    Node* cur = &root_;
    std::string rest = body;
    if (body[0] == '.') {
      size_t dots = body.find_first_not_of('.');
      if (dots == std::string::npos) throw InterpolationError("'" + shown + "' names no key");
      cur = parent_of(&context);
      for (size_t i = 1; i < dots && cur; ++i) cur = parent_of(cur);
      if (!cur) throw InterpolationError("'" + shown + "' goes above the top of the config");
      rest = body.substr(dots);
    }
    std::string walked;
    for (const std::string& seg : parse_segments(rest, shown)) {
      if (has_interpolation(*cur) && !resolve_scalar(*cur)) throw InterpolationError("", nullptr, true);
      Node* next = nullptr;
      if (cur->is_map()) {
        next = cur->find(seg);
      } else if (cur->is_sequence() && !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos) {
        size_t idx = std::stoul(seg);
        if (idx < cur->children.size()) next = &cur->children[idx];
      }
      walked = walked.empty() ? seg : walked + "." + seg;
      if (!next)
        throw InterpolationError("interpolation '" + shown + "': key '" + walked + "' not found" +
                                 did_you_mean(seg, cur->keys()));
      cur = next;
    }
    if (cur == &context) throw InterpolationError("circular interpolation: '" + shown + "' refers to itself");
    if (cur->is_scalar()) {
      if (!resolve_scalar(*cur)) throw InterpolationError("", nullptr, true);
    } else {
      for (Node* p = parent_of(&context); p; p = parent_of(p))
        if (p == cur) throw InterpolationError("circular interpolation: '" + shown + "' refers to a map that contains it");
      resolve_subtree(*cur);
    }
    return *cur;
  }

  Node resolver_value(const std::string& name, const std::string& args, const std::string& shown) {
    if (name != "oc.env")
      throw InterpolationError("unknown resolver '" + name + "' in '" + shown + "' (only oc.env is supported)");
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    size_t comma = args.find(',');
    std::string var = trim(args.substr(0, comma));
    Node r;
    r.kind = Node::Kind::Scalar;
    r.tag = "!";
    if (const char* value = std::getenv(var.c_str())) {
      r.text = value;
    } else if (comma != std::string::npos) {
      r.text = trim(args.substr(comma + 1));
      if (r.text == "null") r.kind = Node::Kind::Null;
    } else {
      throw InterpolationError("environment variable '" + var + "' is not set (" + shown + ")");
    }
    return r;
  }

  // "a.b[0].c" -> a, b, 0, c
  static std::vector<std::string> parse_segments(const std::string& path, const std::string& shown) {
    std::vector<std::string> out;
    std::string cur;
    for (size_t i = 0; i < path.size(); ++i) {
      char c = path[i];
      if (c == '.') {
        if (cur.empty() && (i == 0 || path[i - 1] != ']')) throw InterpolationError("'" + shown + "' has an empty key");
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else if (c == '[') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
        size_t close = path.find(']', i);
        if (close == std::string::npos) throw InterpolationError("'" + shown + "' has an unclosed '['");
        out.push_back(path.substr(i + 1, close - i - 1));
        i = close;
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(cur);
    if (out.empty()) throw InterpolationError("'" + shown + "' names no key");
    return out;
  }

  Node& root_;
  size_t copied_nodes_ = 0;
  const std::string& file_;
  std::vector<Diagnostic>& diags_;
  std::map<const Node*, Node*> parent_;
  std::vector<const Node*> stack_;
  std::set<const Node*> done_;
};

}  // namespace

void resolve_interpolations(Node& root, const std::string& file, std::vector<Diagnostic>& diags) {
  Resolver(root, file, diags).resolve_all(root);
}

}  // namespace tb::config
