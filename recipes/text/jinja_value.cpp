// Values and their Python semantics (jinja_value.h).
#include "text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(key.str());
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.str() == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* NamespaceData::find(const std::string& name) const {
  for (const auto& [k, v] : attrs)
    if (k == name) return &v;
  return nullptr;
}

void NamespaceData::set(const std::string& name, Value value) {
  for (auto& [k, v] : attrs) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(name, std::move(value));
}

Value Object::attribute(const std::string& name) const {
  return Value::undefined("'" + std::string(type_name()) + " object' has no attribute '" + name + "'");
}

Value Object::call(Renderer&, Args&) { throw Fault("'" + std::string(type_name()) + "' object is not callable"); }

bool Value::is_callable() const { return kind() == Kind::Callable || (kind() == Kind::Object && object().callable()); }

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List:
      return std::get<std::shared_ptr<ListData>>(v_).get();
    case Kind::Dict:
      return std::get<std::shared_ptr<DictData>>(v_).get();
    case Kind::Namespace:
      return std::get<std::shared_ptr<NamespaceData>>(v_).get();
    case Kind::Callable:
      return std::get<std::shared_ptr<Callable>>(v_).get();
    case Kind::Object:
      return std::get<std::shared_ptr<Object>>(v_).get();
    default:
      return nullptr;
  }
}

const Json* Value::origin() const {
  if (is_list()) return list().origin;
  if (is_dict()) return dict().origin;
  return nullptr;
}

Value make_list(std::vector<Value> items, bool tuple) {
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->is_tuple = tuple;
  return Value(std::move(data));
}

Value make_view(std::vector<Value> items, std::string view) {
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->view = std::move(view);
  return Value(std::move(data));
}

Value make_dict(std::vector<std::pair<Value, Value>> entries) {
  auto data = std::make_shared<DictData>();
  data->entries = std::move(entries);
  return Value(std::move(data));
}

Value make_function(std::string name, std::function<Value(Renderer&, Args&)> fn) {
  return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
}

namespace {
// Deeper context values are refused, not walked: each level is a frame of this recursion.
constexpr int kMaxContextDepth = 256;
}  // namespace

Value from_json(const Json& node, int depth) {
  if (depth > kMaxContextDepth)
    throw std::invalid_argument("a template variable nests deeper than " + std::to_string(kMaxContextDepth) + " levels");
  switch (node.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value(node.get<bool>());
    case Json::value_t::number_integer:
      return Value(node.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = node.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float:
      return Value(node.get<double>());
    case Json::value_t::string:
      return Value(node.get<std::string>());
    case Json::value_t::array: {
      auto data = std::make_shared<ListData>();
      data->origin = &node;
      data->items.reserve(node.size());
      for (const auto& item : node) data->items.push_back(from_json(item, depth + 1));
      return Value(std::move(data));
    }
    case Json::value_t::object: {
      auto data = std::make_shared<DictData>();
      data->origin = &node;
      data->entries.reserve(node.size());
      for (auto it = node.begin(); it != node.end(); ++it) data->entries.emplace_back(Value(it.key()), from_json(*it, depth + 1));
      return Value(std::move(data));
    }
    default:
      return Value::none();
  }
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "NoneType";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "str";
    case Value::Kind::List:
      return !v.list().view.empty() ? v.list().view : v.is_tuple() ? "tuple" : "list";
    case Value::Kind::Dict:
      return "dict";
    case Value::Kind::Namespace:
      return "Namespace";
    case Value::Kind::Callable:
      return "builtin_function_or_method";
    case Value::Kind::Object:
      return v.object().type_name();
  }
  return "object";
}

void fail_undefined(const Value& v) {
  const Undefined& u = v.undefined_info();
  throw Fault(u.hint.empty() ? std::string("undefined value") : u.hint);
}

std::string format_float(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // [-]d[.ddd]e[+-]XX
  const bool negative = sci[0] == '-';
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exponent = std::stoi(sci.substr(e + 1));
  const int decpt = exponent + 1;  // digits d1d2... are 0.d1d2... * 10^decpt
  const int ndigits = static_cast<int>(digits.size());
  std::string out = negative ? "-" : "";
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (ndigits > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += buf;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (decpt < ndigits) {
    out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
  } else {
    out += digits + std::string(static_cast<size_t>(decpt - ndigits), '0') + ".0";
  }
  return out;
}

namespace {
// Python's repr marks a container already being written: a list holding itself is [[...]], a namespace
// holding itself <Namespace {'a': <Namespace {...}>}> (as jinja2 prints it); it recursed for ever here.
std::string repr_in(const Value& v, std::vector<const void*>& open);

template <class Fn>
std::string guarded(const void* container, std::vector<const void*>& open, const char* again, Fn write) {
  if (std::find(open.begin(), open.end(), container) != open.end()) return again;
  open.push_back(container);
  std::string out = write();
  open.pop_back();
  return out;
}

std::string repr_in(const Value& v, std::vector<const void*>& open) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return format_float(v.as_float());
    case Value::Kind::String:
      return py_repr_string(v.str());
    case Value::Kind::List: {
      const auto& items = v.list().items;
      if (v.list().is_iterator()) return "<" + v.list().view + " object>";
      return guarded(&v.list(), open, v.is_tuple() ? "(...)" : "[...]", [&] {
        if (!v.list().view.empty()) {  // dict_items([...])
          std::string out = v.list().view + "([";
          for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + repr_in(items[i], open);
          return out + "])";
        }
        std::string out = v.is_tuple() ? "(" : "[";
        for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + repr_in(items[i], open);
        if (v.is_tuple() && items.size() == 1) out += ",";
        return out + (v.is_tuple() ? ")" : "]");
      });
    }
    case Value::Kind::Dict:
      return guarded(&v.dict(), open, "{...}", [&] {
        std::string out = "{";
        bool first = true;
        for (const auto& [k, val] : v.dict().entries) {
          out += (first ? "" : ", ") + repr_in(k, open) + ": " + repr_in(val, open);
          first = false;
        }
        return out + "}";
      });
    case Value::Kind::Namespace:
      return guarded(&v.ns(), open, "<Namespace {...}>", [&] {
        std::string out = "<Namespace {";
        bool first = true;
        for (const auto& [k, val] : v.ns().attrs) {
          out += (first ? "" : ", ") + py_repr_string(k) + ": " + repr_in(val, open);
          first = false;
        }
        return out + "}>";
      });
    case Value::Kind::Callable:
      return "<built-in function " + v.callable_fn().name + ">";
    case Value::Kind::Object:
      return "<" + std::string(v.object().type_name()) + " object>";
  }
  return "";
}
}  // namespace

std::string repr(const Value& v) {
  std::vector<const void*> open;
  return repr_in(v, open);
}

std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (v.is_string()) return v.str();
  return repr(v);
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return false;
    case Value::Kind::Bool:
      return v.as_bool();
    case Value::Kind::Int:
      return v.as_int() != 0;
    case Value::Kind::Float:
      return v.as_float() != 0.0;
    case Value::Kind::String:
      return !v.str().empty();
    case Value::Kind::List:
      return v.list().is_iterator() || !v.list().items.empty();
    case Value::Kind::Dict:
      return !v.dict().entries.empty();
    default:
      return true;
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.str() == b.str();
    case Value::Kind::List: {
      if (!a.list().view.empty() || !b.list().view.empty()) return a.identity() == b.identity();
      if (a.is_tuple() != b.is_tuple()) return false;
      const auto &x = a.list().items, &y = b.list().items;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const auto &x = a.dict(), &y = b.dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, val] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(val, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool less(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto &x = a.list().items, &y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return less(x[i], y[i], op);
    }
    return x.size() < y.size();
  }
  throw Fault(std::string("'") + op + "' not supported between instances of '" + type_name(a) + "' and '" +
              type_name(b) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::String:
      if (!item.is_string()) throw Fault("'in <string>' requires string as left operand, not " + type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& x : container.list().items)
        if (equals(x, item)) return true;
      return false;
    case Value::Kind::Dict:
      return container.dict().find(item) != nullptr;
    default:
      throw Fault("argument of type '" + type_name(container) + "' is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(utf8_length(v.str()));
    case Value::Kind::List:
      if (v.list().is_iterator()) throw Fault("object of type '" + type_name(v) + "' has no len()");
      return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::Dict:
      return static_cast<int64_t>(v.dict().entries.size());
    default:
      throw Fault("object of type '" + type_name(v) + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.str())) {
        std::string s;
        utf8_append(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    case Value::Kind::List:
      return v.list().items;
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict().entries) keys.push_back(k);
      return keys;
    }
    default:
      throw Fault("'" + type_name(v) + "' object is not iterable");
  }
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw Fault("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

double float_mod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

double float_floordiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

// Python's integers do not overflow; 64-bit ones do (undefined behaviour, or SIGFPE for the lowest
// value // -1). A chat template never needs such a number: a result out of range is an error.
int64_t int_result(bool overflowed, int64_t value, const std::string& op) {
  if (overflowed) throw Fault("integer overflow: the result of '" + op + "' does not fit in 64 bits");
  return value;
}

}  // namespace

void check_text_size(uint64_t bytes, const std::string& what) {
  if (bytes > kMaxTextBytes)
    throw Fault(what + " would be " + std::to_string(bytes >> 20) + " MiB, larger than a template may make (" +
                std::to_string(kMaxTextBytes >> 20) + " MiB)");
}

namespace {

// 'x' * n and [..] * n with a huge n would take memory without end (Python raises MemoryError).
constexpr uint64_t kMaxRepeatBytes = 16u << 20, kMaxRepeatItems = 1u << 20;

Value repeat(const Value& seq, int64_t n) {
  const uint64_t unit = seq.is_string() ? seq.str().size() : seq.list().items.size();
  const uint64_t limit = seq.is_string() ? kMaxRepeatBytes : kMaxRepeatItems;
  if (n > 0 && unit > 0 && uint64_t(n) > limit / unit)
    throw Fault("repeating a " + type_name(seq) + " " + std::to_string(n) + " times is larger than a template may make (" +
                (seq.is_string() ? "16 MiB" : "1048576 items") + ")");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(out);
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.list().items.begin(), seq.list().items.end());
  return make_list(std::move(items), seq.is_tuple());
}

}  // namespace

Value binary(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = numbers && (a.is_float() || b.is_float());
  if (op == "+") {
    if (numbers) {
      if (floats) return Value(a.as_float() + b.as_float());
      int64_t r = 0;
      const bool overflowed = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
      return Value(int_result(overflowed, r, op));
    }
    if (a.is_string() && b.is_string()) {
      check_text_size(uint64_t(a.str().size()) + b.str().size(), "the string '+' makes");
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && a.list().view.empty() && b.list().view.empty()) {
      if (a.list().items.size() + b.list().items.size() > kMaxRepeatItems)
        throw Fault("the list '+' makes would hold more than " + std::to_string(kMaxRepeatItems) + " items");
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return make_list(std::move(items), a.is_tuple());
    }
    if (a.is_string() || a.is_list())
      throw Fault("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (numbers) {
      if (floats) return Value(a.as_float() - b.as_float());
      int64_t r = 0;
      const bool overflowed = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
      return Value(int_result(overflowed, r, op));
    }
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (numbers) {
      if (floats) return Value(a.as_float() * b.as_float());
      int64_t r = 0;
      const bool overflowed = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
      return Value(int_result(overflowed, r, op));
    }
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    if (a.is_string() || a.is_list() || b.is_string() || b.is_list())
      throw Fault("can't multiply sequence by non-int of type '" + type_name(a.is_string() || a.is_list() ? b : a) +
                  "'");
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!numbers) unsupported(op, a, b);
    if (b.as_float() == 0.0) throw Fault(floats ? "float division by zero" : "division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//") {
    if (!numbers) unsupported(op, a, b);
    if (floats) {
      if (b.as_float() == 0.0) throw Fault("float floor division by zero");
      return Value(float_floordiv(a.as_float(), b.as_float()));
    }
    const int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) throw Fault("integer division or modulo by zero");
    if (y == -1) return Value(int_result(x == INT64_MIN, x == INT64_MIN ? x : -x, op));
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return Value(q);
  }
  if (op == "%") {
    if (a.is_string()) return Value(percent_format(a.str(), b));
    if (!numbers) unsupported(op, a, b);
    if (floats) {
      if (b.as_float() == 0.0) throw Fault("float modulo");
      return Value(float_mod(a.as_float(), b.as_float()));
    }
    const int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) throw Fault("integer division or modulo by zero");
    if (y == -1) return Value(int64_t{0});
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value(r);
  }
  if (op == "**") {
    if (!numbers) unsupported(op, a, b);
    if (!floats && b.as_int() >= 0) {
      int64_t result = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {
        int64_t next = 0;
        if (e & 1) {
          const bool overflowed = __builtin_mul_overflow(result, base, &next);
          result = int_result(overflowed, next, op);
        }
        if (e > 1) {
          const bool overflowed = __builtin_mul_overflow(base, base, &next);
          base = int_result(overflowed, next, op);
        }
      }
      return Value(result);
    }
    if (a.as_float() == 0.0 && b.as_float() < 0) throw Fault("0.0 cannot be raised to a negative power");
    return Value(std::pow(a.as_float(), b.as_float()));
  }
  throw Fault("unknown operator " + op);
}

// json.dumps ------------------------------------------------------------------------------------------

namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
          if (c >= 0x10000) {
            const char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                          static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          utf8_append(out, c);
        }
    }
  }
  out += '"';
}

std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f < 0 ? "-Infinity" : "Infinity";
  return format_float(f);
}

std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String:
      return k.str();
    case Value::Kind::Bool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    case Value::Kind::Int:
      return std::to_string(k.as_int());
    case Value::Kind::Float:
      return json_float(k.as_float());
    default:
      throw Fault("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  const std::string item_sep = o.has_separators ? o.item_separator : (o.has_indent ? "," : ", ");
  const std::string key_sep = o.has_separators ? o.key_separator : ": ";
  auto newline = [&](int depth) {
    if (!o.has_indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::Float:
      out += json_float(v.as_float());
      return;
    case Value::Kind::String:
      dump_string(out, v.str(), o.ensure_ascii);
      return;
    case Value::Kind::List: {
      const auto& items = v.list().items;
      if (!v.list().view.empty()) throw Fault("Object of type " + type_name(v) + " is not JSON serializable");
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        dump(out, items[i], o, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, val] : v.dict().entries) entries.emplace_back(json_key(k), &val);
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (o.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        dump_string(out, entries[i].first, o.ensure_ascii);
        out += key_sep;
        dump(out, *entries[i].second, o, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw Fault("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string dump_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(out, v, options, 0);
  return out;
}

}  // namespace tb::text::jinja::detail
