// Attribute and item lookup as the sandbox does it, and the methods of str, dict and list that templates
// call (jinja_builtins.h). The list and dict methods that mutate are refused, as ImmutableSandboxedEnvironment
// refuses them.
#include <algorithm>
#include <set>

#include "text/jinja_builtins.h"
#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {
namespace {

// jinja2's object_type_repr, as undefined messages quote it.
std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  if (v.kind() == Value::Kind::Object) return "jinja2.runtime." + std::string(v.object().type_name()) + " object";
  return type_name(v) + " object";
}

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

Value missing_element(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attribute(obj, key.str());
  return Value::undefined("'" + object_type_repr(obj) + "' has no element " + repr(key));
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.", true);
}

std::string str_arg(const std::optional<Value>& v, const char* what) {
  if (!v || !v->is_string()) throw Fault(std::string(what) + " must be str, not " + (v ? type_name(*v) : "None"));
  return v->str();
}

std::optional<std::string> opt_str_arg(const std::optional<Value>& v, const char* fn) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) throw Fault(std::string(fn) + " arg must be None or str");
  return v->str();
}

int64_t int_arg(const std::optional<Value>& v, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) throw Fault("'" + type_name(*v) + "' object cannot be interpreted as an integer");
  return v->as_int();
}

std::optional<int64_t> opt_int_arg(const std::optional<Value>& v) {
  if (!v || v->is_none()) return std::nullopt;
  return int_arg(v, 0);
}

Value strings(const std::vector<std::string>& parts, bool tuple = false) {
  std::vector<Value> items(parts.begin(), parts.end());
  return make_list(std::move(items), tuple);
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  const std::u32string text = utf8_decode(s);
  return !text.empty() && std::all_of(text.begin(), text.end(), pred);
}


// str.istitle(): cased runs start with an upper (or title) case character and go on in lower case.
bool is_title(const std::string& s) {
  bool cased = false, previous_cased = false;
  for (char32_t c : utf8_decode(s)) {
    if (py_isupper_char(c) || (py_iscased(c) && !py_islower_char(c))) {
      if (previous_cased) return false;
      previous_cased = cased = true;
    } else if (py_islower_char(c)) {
      if (!previous_cased) return false;
      previous_cased = cased = true;
    } else {
      previous_cased = false;
    }
  }
  return cased;
}

std::string pad(const std::string& s, int64_t width, const std::optional<Value>& fill, char how) {
  const std::string f = fill ? str_arg(fill, "fillchar") : " ";
  if (utf8_length(f) != 1) throw Fault("The fill character must be exactly one character long");
  const int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return s;
  check_text_size(uint64_t(width) + s.size(), "the padded string");
  const int64_t margin = width - len;
  int64_t left = how == 'l' ? 0 : how == 'r' ? margin : margin / 2 + (margin & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (int64_t i = 0; i < margin - left; ++i) out += f;
  return out;
}

bool starts_or_ends(const std::string& s, const Value& affix, const std::optional<Value>& start,
                    const std::optional<Value>& end, bool ends, const char* fn) {
  const std::u32string text = utf8_decode(s);
  const auto n = static_cast<int64_t>(text.size());
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  const int64_t b = clamp(int_arg(start, 0)), e = clamp(int_arg(end, n));
  const std::u32string window = b <= e ? text.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)) : U"";
  auto test = [&](const Value& a) {
    if (!a.is_string()) throw Fault(std::string(fn) + " first arg must be str or a tuple of str, not " + type_name(a));
    const std::u32string x = utf8_decode(a.str());
    if (b > e) return false;
    if (x.size() > window.size()) return false;
    return ends ? window.compare(window.size() - x.size(), x.size(), x) == 0 : window.compare(0, x.size(), x) == 0;
  };
  if (affix.is_tuple()) {
    for (const auto& a : affix.list().items)
      if (test(a)) return true;
    return false;
  }
  return test(affix);
}

Value call_str_method(const std::string& s, const std::string& name, const Args& args) {
  auto bind = [&](std::vector<std::string> params, size_t required = 0) {
    return bind_args(args, params, "str." + name, required);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto a = bind({"chars"});
    return Value(py_strip(s, opt_str_arg(a[0], name.c_str()), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const auto a = bind({"sep", "maxsplit"});
    try {
      return strings(py_split(s, opt_str_arg(a[0], name.c_str()), int_arg(a[1], -1), name == "rsplit"));
    } catch (const std::invalid_argument& e) {
      throw Fault(e.what());
    }
  }
  if (name == "splitlines") {
    const auto a = bind({"keepends"});
    return strings(py_splitlines(s, a[0] && truthy(*a[0])));
  }
  if (name == "startswith" || name == "endswith") {
    const auto a = bind({"affix", "start", "end"}, 1);
    return Value(starts_or_ends(s, *a[0], a[1], a[2], name == "endswith", name.c_str()));
  }
  if (name == "upper") return bind({}), Value(py_upper(s));
  if (name == "lower") return bind({}), Value(py_lower(s));
  if (name == "title") return bind({}), Value(py_title(s));
  if (name == "capitalize") return bind({}), Value(py_capitalize(s));
  if (name == "swapcase") return bind({}), Value(py_swapcase(s));
  if (name == "casefold") return bind({}), Value(py_casefold(s));
  if (name == "replace") {
    const auto a = bind({"old", "new", "count"}, 2);
    return Value(
        py_replace(s, str_arg(a[0], "replace() argument 1"), str_arg(a[1], "replace() argument 2"), int_arg(a[2], -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const auto a = bind({"sub", "start", "end"}, 1);
    const int64_t at = py_find(s, str_arg(a[0], "must be str"), opt_int_arg(a[1]), opt_int_arg(a[2]), name[0] == 'r');
    if (at < 0 && (name == "index" || name == "rindex")) throw Fault("substring not found");
    return Value(at);
  }
  if (name == "count") {
    const auto a = bind({"sub"}, 1);
    return Value(py_count(s, str_arg(a[0], "must be str")));
  }
  if (name == "join") {
    const auto a = bind({"iterable"}, 1);
    std::string out;
    size_t i = 0;
    for (const auto& item : iterate(*a[0])) {
      if (!item.is_string())
        throw Fault("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(item) + " found");
      if (i++) out += s;
      out += item.str();
    }
    return Value(out);
  }
  if (name == "format") return Value(brace_format(s, args));
  if (name == "isdigit") return bind({}), Value(all_chars(s, py_isdigit));
  if (name == "isdecimal") return bind({}), Value(all_chars(s, py_isdecimal));
  if (name == "isnumeric") return bind({}), Value(all_chars(s, py_isnumeric));
  if (name == "isalpha") return bind({}), Value(all_chars(s, py_isalpha));
  if (name == "isalnum") return bind({}), Value(all_chars(s, py_isalnum));
  if (name == "isspace") return bind({}), Value(all_chars(s, py_isspace));
  if (name == "isupper") return bind({}), Value(py_is_all_cased(s, true));
  if (name == "islower") return bind({}), Value(py_is_all_cased(s, false));
  if (name == "istitle") return bind({}), Value(is_title(s));
  if (name == "center" || name == "ljust" || name == "rjust") {
    const auto a = bind({"width", "fillchar"}, 1);
    return Value(pad(s, int_arg(a[0], 0), a[1], name == "center" ? 'c' : name == "ljust" ? 'l' : 'r'));
  }
  if (name == "zfill") {
    const auto a = bind({"width"}, 1);
    const int64_t width = int_arg(a[0], 0);
    const int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value(s);
    const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    return Value((sign ? s.substr(0, 1) : "") + std::string(static_cast<size_t>(width - len), '0') +
                 s.substr(sign ? 1 : 0));
  }
  if (name == "partition" || name == "rpartition") {
    const auto a = bind({"sep"}, 1);
    const std::string sep = str_arg(a[0], "must be str");
    if (sep.empty()) throw Fault("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) return name == "partition" ? strings({s, "", ""}, true) : strings({"", "", s}, true);
    return strings({s.substr(0, at), sep, s.substr(at + sep.size())}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const auto a = bind({"affix"}, 1);
    const std::string x = str_arg(a[0], "must be str");
    if (name == "removeprefix") return Value(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
    const bool ends = s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
    return Value(ends ? s.substr(0, s.size() - x.size()) : s);
  }
  throw Fault("'str' object has no attribute '" + name + "'");
}

const std::set<std::string>& str_methods() {
  static const std::set<std::string> names = {
      "strip",     "lstrip",  "rstrip",  "split",      "rsplit",     "splitlines",   "startswith",  "endswith",
      "upper",     "lower",   "title",   "capitalize", "swapcase",   "casefold",     "replace",     "find",
      "rfind",     "index",   "rindex",  "count",      "join",       "format",       "isdigit",     "isdecimal",
      "isnumeric", "isalpha", "isalnum", "isspace",    "isupper",    "islower",      "istitle",     "center",
      "ljust",     "rjust",   "zfill",   "partition",  "rpartition", "removeprefix", "removesuffix"};
  return names;
}

Value call_dict_method(const Value& d, const std::string& name, const Args& args) {
  const auto bind = [&](std::vector<std::string> params, size_t required = 0) {
    return bind_args(args, params, "dict." + name, required);
  };
  if (name == "items") {
    bind({});
    std::vector<Value> items;
    for (const auto& [k, v] : d.dict().entries) items.push_back(make_list({k, v}, true));
    return make_view(std::move(items), "dict_items");
  }
  if (name == "keys") return bind({}), make_view(iterate(d), "dict_keys");
  if (name == "values") {
    bind({});
    std::vector<Value> values;
    for (const auto& [k, v] : d.dict().entries) values.push_back(v);
    return make_view(std::move(values), "dict_values");
  }
  if (name == "get") {
    const auto a = bind({"key", "default"}, 1);
    const Value* v = d.dict().find(*a[0]);
    return v ? *v : (a[1] ? *a[1] : Value::none());
  }
  if (name == "copy") return bind({}), make_dict(d.dict().entries);
  throw Fault("'dict' object has no attribute '" + name + "'");
}

Value call_list_method(const Value& l, const std::string& name, const Args& args) {
  const auto& items = l.list().items;
  if (name == "count") {
    const auto a = bind_args(args, {"value"}, "count", 1);
    return Value(static_cast<int64_t>(
        std::count_if(items.begin(), items.end(), [&](const Value& x) { return equals(x, *a[0]); })));
  }
  if (name == "index") {
    const auto a = bind_args(args, {"value", "start", "stop"}, "index", 1);
    const auto n = static_cast<int64_t>(items.size());
    auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
    for (int64_t i = clamp(int_arg(a[1], 0)); i < clamp(int_arg(a[2], n)); ++i)
      if (equals(items[static_cast<size_t>(i)], *a[0])) return Value(i);
    throw Fault(repr(*a[0]) + " is not in list");
  }
  if (name == "copy") return bind_args(args, {}, "copy"), make_list(items, l.is_tuple());
  throw Fault("'list' object has no attribute '" + name + "'");
}

}  // namespace

std::vector<std::optional<Value>> bind_args(const Args& args, const std::vector<std::string>& params,
                                            const std::string& function, size_t required) {
  std::vector<std::optional<Value>> bound(params.size());
  if (args.positional.size() > params.size())
    throw Fault(function + "() takes at most " + std::to_string(params.size()) + " argument" +
                (params.size() == 1 ? "" : "s") + " (" + std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [name, value] : args.keywords) {
    const auto it = std::find(params.begin(), params.end(), name);
    if (it == params.end()) throw Fault(function + "() got an unexpected keyword argument '" + name + "'");
    auto& slot = bound[static_cast<size_t>(it - params.begin())];
    if (slot) throw Fault(function + "() got multiple values for argument '" + name + "'");
    slot = value;
  }
  for (size_t i = 0; i < required && i < params.size(); ++i)
    if (!bound[i]) throw Fault(function + "() missing required argument '" + params[i] + "'");
  return bound;
}

Value find_method(const Value& obj, const std::string& name) {
  static const std::set<std::string> dict_methods = {"items", "keys", "values", "get", "copy"};
  static const std::set<std::string> dict_mutators = {"clear", "pop", "popitem", "setdefault", "update"};
  static const std::set<std::string> list_methods = {"count", "index", "copy"};
  static const std::set<std::string> list_mutators = {"append", "clear",  "extend",  "insert",
                                                      "pop",    "remove", "reverse", "sort"};
  if (obj.is_string() && str_methods().count(name)) {
    const std::string s = obj.str();
    return make_function(name, [s, name](Renderer&, Args& args) { return call_str_method(s, name, args); });
  }
  if (obj.is_dict()) {
    if (dict_mutators.count(name)) return unsafe(obj, name);
    if (dict_methods.count(name))
      return make_function(name, [obj, name](Renderer&, Args& args) { return call_dict_method(obj, name, args); });
  }
  if (obj.is_list() && obj.list().view.empty()) {
    if (list_mutators.count(name) && !obj.is_tuple()) return unsafe(obj, name);
    if (list_methods.count(name))
      return make_function(name, [obj, name](Renderer&, Args& args) { return call_list_method(obj, name, args); });
  }
  return Value::undefined("");
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (!name.empty() && name[0] == '_') return unsafe(obj, name);
  if (obj.is_namespace()) {
    const Value* v = obj.ns().find(name);
    return v ? *v : missing_attribute(obj, name);
  }
  if (obj.kind() == Value::Kind::Object) {
    const Value v = obj.object().attribute(name);
    return v.is_undefined() ? missing_attribute(obj, name) : v;
  }
  const Value method = find_method(obj, name);
  if (!method.is_undefined() || method.undefined_info().unsafe) return method;
  if (obj.is_dict()) {
    const Value* v = obj.dict().find(name);
    if (v) return *v;
  }
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if ((obj.is_string() || (obj.is_list() && obj.list().view.empty())) && (key.is_int() || key.is_bool())) {
    const int64_t n = length(obj);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.list().items[static_cast<size_t>(i)];
      std::string ch;
      utf8_append(ch, utf8_decode(obj.str())[static_cast<size_t>(i)]);
      return Value(ch);
    }
  }
  if (key.is_string()) {
    if (obj.is_namespace()) {
      if (const Value* v = obj.ns().find(key.str())) return *v;
    } else if (obj.kind() == Value::Kind::Object) {
      const Value v = obj.object().attribute(key.str());
      if (!v.is_undefined()) return v;
    } else {
      if (!key.str().empty() && key.str()[0] == '_') return unsafe(obj, key.str());
      const Value method = find_method(obj, key.str());
      if (!method.is_undefined() || method.undefined_info().unsafe) return method;
    }
  }
  return missing_element(obj, key);
}

Value get_slice(const Value& obj, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                const std::optional<int64_t>& step) {
  if (!obj.is_string() && !(obj.is_list() && obj.list().view.empty()))
    return Value::undefined("'" + object_type_repr(obj) + "' has no element slice");
  SliceIndices r{};
  try {
    r = resolve_slice(length(obj), start, stop, step);
  } catch (const std::invalid_argument& e) {
    throw Fault(e.what());
  }
  if (obj.is_string()) {
    const std::u32string text = utf8_decode(obj.str());
    std::u32string out;
    for (int64_t i = 0, at = r.start; i < r.count; ++i, at += r.step) out.push_back(text[static_cast<size_t>(at)]);
    return Value(utf8_encode(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0, at = r.start; i < r.count; ++i, at += r.step)
    items.push_back(obj.list().items[static_cast<size_t>(at)]);
  return make_list(std::move(items), obj.is_tuple());
}

}  // namespace tb::text::jinja::detail
