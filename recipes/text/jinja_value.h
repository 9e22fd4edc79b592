// The values a Jinja template computes with, and the Python semantics jinja2 gives them: str() and
// repr() printing, truthiness, equality and ordering, arithmetic, iteration, len(). Lists and dicts are
// shared and never mutated once built (the immutable sandbox), so an alias or a filtered copy holds the
// very element values of its source, and with them the context node each came from (`origin`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "text/jinja.h"

namespace tb::text::jinja::detail {

class Value;
class Renderer;
struct Args;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  const Json* origin = nullptr;  // the context array this list is, if any
  // The Python iterator or view these items stand for ("generator" from select/map/..., "list_reverseiterator",
  // "dict_items", ...): such a value is not indexable, an iterator has no len() and is always true.
  std::string view;
  bool is_iterator() const { return !view.empty() && view.compare(0, 5, "dict_") != 0; }
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;  // insertion order, as a Python dict
  const Json* origin = nullptr;                  // the context object this dict is, if any
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(Value key, Value value);
};

// namespace(): the one mutable object a template can make ({% set ns.attr = ... %}).
struct NamespaceData {
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);
};

struct Callable {
  std::string name;
  std::function<Value(Renderer&, Args&)> call;
};

// Objects with attributes of their own (the loop variable, cycler, joiner).
struct Object {
  virtual ~Object() = default;
  virtual const char* type_name() const = 0;
  virtual Value attribute(const std::string& name) const;  // undefined unless overridden
  virtual Value call(Renderer& r, Args& args);             // throws "not callable" unless overridden
  virtual bool callable() const { return false; }
};

// Raised by the value layer and the builtins with a Python-style message; the renderer adds the
// template location (TemplateError).
struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The most a template may make of one string, a value or the output: 64 MiB (`ns.s + ns.s` doubled 40
// times reached gigabytes before a bare bad_alloc). Fault "<what> would be larger than a template may make".
inline constexpr uint64_t kMaxTextBytes = uint64_t(64) << 20;
void check_text_size(uint64_t bytes, const std::string& what);

struct Undefined {
  std::string hint;     // what jinja2 says when it is used: "'x' is undefined", "'dict object' has no ..."
  bool unsafe = false;  // an attribute the sandbox refuses (list.append, ...): using it is a SecurityError
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable, Object };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint, bool unsafe = false) { return Value(Undefined{std::move(hint), unsafe}); }
  static Value none() { return Value(std::monostate{}); }
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double f) : v_(f) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::shared_ptr<ListData> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<DictData> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<NamespaceData> n) : v_(std::move(n)) {}
  Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}
  Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const { return is_list() && list().is_tuple; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_callable() const;

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }
  double as_float() const { return is_float() ? std::get<double>(v_) : static_cast<double>(as_int()); }
  const std::string& str() const { return std::get<std::string>(v_); }
  const ListData& list() const { return *std::get<std::shared_ptr<ListData>>(v_); }
  const DictData& dict() const { return *std::get<std::shared_ptr<DictData>>(v_); }
  NamespaceData& ns() const { return *std::get<std::shared_ptr<NamespaceData>>(v_); }
  const Callable& callable_fn() const { return *std::get<std::shared_ptr<Callable>>(v_); }
  Object& object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const Undefined& undefined_info() const { return std::get<Undefined>(v_); }
  // Identity of a container (Python `is`): the shared data it points to.
  const void* identity() const;
  // The context node this list or dict is, or nullptr.
  const Json* origin() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(std::monostate n) : v_(n) {}
  std::variant<Undefined, std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, std::shared_ptr<NamespaceData>, std::shared_ptr<Callable>,
               std::shared_ptr<Object>>
      v_;
};

Value make_list(std::vector<Value> items, bool tuple = false);
Value make_view(std::vector<Value> items, std::string view);
Value make_dict(std::vector<std::pair<Value, Value>> entries = {});
Value make_function(std::string name, std::function<Value(Renderer&, Args&)> fn);

// The context json as values; every array and object keeps a pointer to its node. Throws
// std::invalid_argument for a value nested deeper than 256 levels.
Value from_json(const Json& node, int depth = 0);

// Python semantics.
std::string type_name(const Value& v);  // 'str', 'int', 'dict', 'NoneType', ...
[[noreturn]] void fail_undefined(const Value& v);
std::string to_str(const Value& v);  // str(v); undefined prints as ""
std::string repr(const Value& v);    // repr(v)
bool truthy(const Value& v);         // bool(v)
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b, const char* op = "<");      // raises TypeError across types
bool contains(const Value& container, const Value& item);             // item in container
int64_t length(const Value& v);                                       // len(v)
std::vector<Value> iterate(const Value& v);                           // iter(v), materialised
Value binary(const std::string& op, const Value& a, const Value& b);  // + - * / // % **
std::string format_float(double f);                                   // Python's repr of a float
// printf-style formatting, `fmt % args` (jinja_format.cpp).
std::string percent_format(const std::string& fmt, const Value& args);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as transformers' tojson calls it.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // the text of one level (an int indent n means n spaces)
  bool has_separators = false;
  std::string item_separator = ", ", key_separator = ": ";
  bool sort_keys = false;
};
std::string dump_json(const Value& v, const JsonDumpOptions& options);

}  // namespace tb::text::jinja::detail
