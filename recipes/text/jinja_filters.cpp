// Jinja's filters (jinja2/filters.py) with transformers' tojson. The filters jinja2 writes as generators
// (select, reject, selectattr, rejectattr, map, unique, items, batch) and reverse return iterator values:
// always true, without len(), not indexable, as in Python.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "text/jinja_builtins.h"
#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {
namespace {

using Bound = std::vector<std::optional<Value>>;

Bound bind(const Args& args, std::vector<std::string> params, const char* filter, size_t required = 0) {
  return bind_args(args, params, filter, required);
}

bool flag(const std::optional<Value>& v) { return v && truthy(*v); }

int64_t int_param(const std::optional<Value>& v, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) throw Fault("'" + type_name(*v) + "' object cannot be interpreted as an integer");
  return v->as_int();
}

// "a.b.0" -> ["a", "b", 0], as jinja2's _prepare_attribute_parts.
std::vector<Value> attribute_parts(const std::optional<Value>& attribute) {
  if (!attribute || attribute->is_none()) return {};
  if (!attribute->is_string()) return {*attribute};
  std::vector<Value> parts;
  for (const auto& part : py_split(attribute->str(), std::string("."), -1, false)) {
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    parts.push_back(digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
  }
  return parts;
}

Value lookup_path(Value item, const std::vector<Value>& parts, const std::optional<Value>& fallback = std::nullopt) {
  for (const auto& part : parts) {
    if (item.is_undefined()) fail_undefined(item);
    item = get_item(item, part);
    if (fallback && !fallback->is_none() && item.is_undefined()) item = *fallback;
  }
  return item;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.str())) : v; }

// Python's sorted() (stable; reverse keeps equal items in order) over precomputed keys.
std::vector<Value> sorted_by(const std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reverse ? less(keys[b], keys[a]) : less(keys[a], keys[b]); });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

void check_hashable(const Value& key) {
  if ((key.is_list() && !key.is_tuple()) || key.is_dict()) throw Fault("unhashable type: '" + type_name(key) + "'");
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's round(x, n) for a float: the correctly rounded decimal, ties to even.
double py_round(double x, int64_t digits) {
  if (!std::isfinite(x)) return x;
  if (digits >= 0) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(digits, 300)), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-digits));
  return std::nearbyint(x / scale) * scale;
}

bool parse_python_int(std::string text, int base, int64_t* out) {
  text = py_strip(text, std::nullopt, true, true);
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.empty()) return false;
  size_t i = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') negative = text[i++] == '-';
  if (i + 1 < text.size() && text[i] == '0') {
    const char p = static_cast<char>(text[i + 1] | 0x20);
    if ((p == 'x' && (base == 16 || base == 0)) || (p == 'o' && (base == 8 || base == 0)) ||
        (p == 'b' && (base == 2 || base == 0))) {
      base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
      i += 2;
    }
  }
  if (base == 0) base = 10;
  if (i >= text.size()) return false;
  char* end = nullptr;
  const std::string digits = text.substr(i);
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (!end || *end) return false;
  *out = negative ? -v : v;
  return true;
}

bool parse_python_float(const std::string& raw, double* out) {
  std::string text = py_strip(raw, std::nullopt, true, true);
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.empty()) return false;
  const std::string lower = py_lower(text);
  if (lower == "inf" || lower == "+inf" || lower == "infinity" || lower == "+infinity") return *out = HUGE_VAL, true;
  if (lower == "-inf" || lower == "-infinity") return *out = -HUGE_VAL, true;
  if (lower == "nan" || lower == "+nan" || lower == "-nan") return *out = NAN, true;
  if (text.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end && !*end;
}

Value select_or_reject(const Value& value, const Args& args, bool select, bool by_attribute, const char* filter) {
  if (!truthy(value)) return make_view({}, "generator");
  size_t off = 0;
  std::vector<Value> parts;
  if (by_attribute) {
    if (args.positional.empty()) throw Fault("Missing parameter for attribute name");
    parts = attribute_parts(args.positional[0]);
    off = 1;
  }
  std::optional<std::string> test;
  Args test_args;
  if (args.positional.size() > off) {
    if (!args.positional[off].is_string()) throw Fault(std::string(filter) + ": the test name must be a string");
    test = args.positional[off].str();
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off) + 1, args.positional.end());
    test_args.keywords = args.keywords;
  }
  std::vector<Value> kept;
  for (const auto& item : iterate(value)) {
    const Value subject = by_attribute ? lookup_path(item, parts) : item;
    const bool pass = test ? apply_test(*test, subject, test_args) : truthy(subject);
    if (pass == select) kept.push_back(item);
  }
  return make_view(std::move(kept), "generator");
}

Value do_map(const Value& value, const Args& args) {
  if (!truthy(value)) return make_view({}, "generator");
  std::vector<Value> out;
  if (args.positional.empty()) {
    std::optional<Value> attribute, fallback;
    for (const auto& [k, v] : args.keywords) {
      if (k == "attribute")
        attribute = v;
      else if (k == "default")
        fallback = v;
      else
        throw Fault("Unexpected keyword argument '" + k + "'");
    }
    if (!attribute) throw Fault("map requires a filter argument");
    const auto parts = attribute_parts(attribute);
    for (const auto& item : iterate(value)) out.push_back(lookup_path(item, parts, fallback));
  } else {
    if (!args.positional[0].is_string()) throw Fault("map: the filter name must be a string");
    const std::string name = args.positional[0].str();
    Args rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    for (const auto& item : iterate(value)) out.push_back(apply_filter(name, item, rest));
  }
  return make_view(std::move(out), "generator");
}

Value min_or_max(const Value& value, const Args& args, bool max, const char* filter) {
  const auto a = bind(args, {"case_sensitive", "attribute"}, filter);
  const std::vector<Value> items = iterate(value);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const auto parts = attribute_parts(a[1]);
  auto key = [&](const Value& item) {
    Value k = lookup_path(item, parts);
    return flag(a[0]) ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (max ? less(best_key, k) : less(k, best_key)) best = i, best_key = std::move(k);
  }
  return items[best];
}

Value do_tojson(const Value& value, const Args& args) {
  const auto a = bind(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonDumpOptions o;
  o.ensure_ascii = flag(a[0]);
  if (a[1] && !a[1]->is_none()) {
    o.has_indent = true;
    if (a[1]->is_string())
      o.indent = a[1]->str();
    else {
      const int64_t indent = std::max<int64_t>(0, int_param(a[1], 0));
      check_text_size(uint64_t(indent), "the tojson indent");
      o.indent = std::string(static_cast<size_t>(indent), ' ');
    }
  }
  if (a[2] && !a[2]->is_none()) {
    const std::vector<Value> seps = iterate(*a[2]);
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
      throw Fault("separators must be a (item_separator, key_separator) pair of strings");
    o.has_separators = true;
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  o.sort_keys = flag(a[3]);
  return Value(dump_json(value, o));
}

Value do_round(const Value& value, const Args& args) {
  const auto a = bind(args, {"precision", "method"}, "round");
  const int64_t precision = int_param(a[0], 0);
  const std::string method = a[1] ? to_str(*a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") throw Fault("method must be common, ceil or floor");
  if (!value.is_number()) throw Fault("type " + type_name(value) + " doesn't define __round__ method");
  if (method == "common") {
    if (!value.is_float()) {
      if (precision >= 0) return Value(value.as_int());
      return Value(static_cast<int64_t>(py_round(static_cast<double>(value.as_int()), precision)));
    }
    return Value(py_round(value.as_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = value.as_float() * scale;
  return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value do_indent(const Value& value, const Args& args) {
  const auto a = bind(args, {"width", "first", "blank"}, "indent");
  const int64_t width = a[0] && a[0]->is_string() ? 0 : std::max<int64_t>(0, int_param(a[0], 4));
  check_text_size(uint64_t(width), "the indent");
  const std::string indention = a[0] && a[0]->is_string() ? a[0]->str() : std::string(static_cast<size_t>(width), ' ');
  const std::vector<std::string> lines = py_splitlines(to_str(value) + "\n", false);
  check_text_size(uint64_t(lines.size()) * indention.size() + to_str(value).size(), "the indented text");
  std::string rv;
  if (flag(a[2])) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
  }
  if (flag(a[1])) rv = indention + rv;
  return Value(rv);
}

Value do_truncate(const Value& value, const Args& args) {
  const auto a = bind(args, {"length", "killwords", "end", "leeway"}, "truncate");
  const std::u32string s = utf8_decode(to_str(value));
  const int64_t length = int_param(a[0], 255);
  const std::string end = a[2] ? to_str(*a[2]) : "...";
  const int64_t leeway = int_param(a[3], 5);
  const auto end_len = static_cast<int64_t>(utf8_length(end));
  if (length < end_len)
    throw Fault("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value(utf8_encode(s));
  const std::string head = utf8_encode(s.substr(0, static_cast<size_t>(length - end_len)));
  if (flag(a[1])) return Value(head + end);
  return Value(py_split(head, std::string(" "), 1, true)[0] + end);
}

std::unordered_map<std::string, FilterFn> make_filters() {
  std::unordered_map<std::string, FilterFn> f;
  f["abs"] = [](const Value& v, const Args& args) {
    bind(args, {}, "abs");
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int() || v.is_bool()) {
      if (v.as_int() == INT64_MIN) throw Fault("integer overflow: abs() of the smallest 64-bit integer");
      return Value(static_cast<int64_t>(std::llabs(v.as_int())));
    }
    throw Fault("bad operand type for abs(): '" + type_name(v) + "'");
  };
  f["attr"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"name"}, "attr", 1);
    const std::string name = to_str(*a[0]);
    if (v.is_dict() || v.is_string() || v.is_list()) {
      const Value m = find_method(v, name);
      return m.is_undefined() && !m.undefined_info().unsafe
                 ? Value::undefined("'" + type_name(v) + " object' has no attribute '" + name + "'")
                 : m;
    }
    return get_attribute(v, name);
  };
  f["batch"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"linecount", "fill_with"}, "batch", 1);
    const int64_t n = int_param(a[0], 1);
    std::vector<Value> rows, row;
    for (const auto& item : iterate(v)) {
      if (static_cast<int64_t>(row.size()) == n) rows.push_back(make_list(std::move(row))), row.clear();
      row.push_back(item);
    }
    if (!row.empty()) {
      if (a[1] && !a[1]->is_none()) {
        // batch(1e9, fill) filled a billion items: the fill is bounded as a list is.
        if (n > int64_t(1) << 20) throw Fault("batch() would fill a row to more than 1048576 items");
        while (static_cast<int64_t>(row.size()) < n) row.push_back(*a[1]);
      }
      rows.push_back(make_list(std::move(row)));
    }
    return make_view(std::move(rows), "generator");
  };
  f["capitalize"] = [](const Value& v, const Args& args) {
    return bind(args, {}, "capitalize"), Value(py_capitalize(to_str(v)));
  };
  f["center"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"width"}, "center");
    const std::string s = to_str(v);
    const int64_t width = int_param(a[0], 80), len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value(s);
    check_text_size(uint64_t(width) + s.size(), "the centred string");
    const int64_t margin = width - len, left = margin / 2 + (margin & width & 1);  // CPython's str.center
    return Value(std::string(static_cast<size_t>(left), ' ') + s +
                 std::string(static_cast<size_t>(margin - left), ' '));
  };
  f["length"] =
      f["count"] = [](const Value& v, const Args& args) { return bind(args, {}, "length"), Value(length(v)); };
  f["default"] = f["d"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"default_value", "boolean"}, "default");
    if (v.is_undefined() || (flag(a[1]) && !truthy(v))) return a[0] ? *a[0] : Value("");
    return v;
  };
  f["dictsort"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"case_sensitive", "by", "reverse"}, "dictsort");
    if (!v.is_dict()) throw Fault("'" + type_name(v) + "' object has no attribute 'items'");
    const std::string by = a[1] ? to_str(*a[1]) : "key";
    if (by != "key" && by != "value") throw Fault("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> items, keys;
    for (const auto& [k, val] : v.dict().entries) {
      items.push_back(make_list({k, val}, true));
      keys.push_back(flag(a[0]) ? (by == "key" ? k : val) : ignore_case(by == "key" ? k : val));
    }
    return make_list(sorted_by(items, keys, flag(a[2])));
  };
  f["escape"] =
      f["e"] = [](const Value& v, const Args& args) { return bind(args, {}, "escape"), Value(escape_html(to_str(v))); };
  f["first"] = [](const Value& v, const Args& args) {
    bind(args, {}, "first");
    const auto items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  };
  f["last"] = [](const Value& v, const Args& args) {
    bind(args, {}, "last");
    if (v.is_list() && v.list().is_iterator()) throw Fault("'" + type_name(v) + "' object is not reversible");
    const auto items = iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  };
  f["float"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"default"}, "float");
    double out = 0;
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string() && parse_python_float(v.str(), &out)) return Value(out);
    return a[0] ? *a[0] : Value(0.0);
  };
  f["format"] = [](const Value& v, const Args& args) {
    if (!args.positional.empty() && !args.keywords.empty())
      throw Fault("can't handle positional and keyword arguments at the same time");
    if (!args.keywords.empty()) {
      std::vector<std::pair<Value, Value>> entries;
      for (const auto& [k, val] : args.keywords) entries.emplace_back(Value(k), val);
      return Value(percent_format(to_str(v), make_dict(std::move(entries))));
    }
    return Value(percent_format(to_str(v), make_list(args.positional, true)));
  };
  f["indent"] = do_indent;
  f["int"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"default", "base"}, "int");
    const Value fallback = a[0] ? *a[0] : Value(0);
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float())
      return std::isfinite(v.as_float()) ? Value(static_cast<int64_t>(std::trunc(v.as_float()))) : fallback;
    if (v.is_string()) {
      int64_t out = 0;
      double d = 0;
      if (parse_python_int(v.str(), static_cast<int>(int_param(a[1], 10)), &out)) return Value(out);
      if (parse_python_float(v.str(), &d) && std::isfinite(d)) return Value(static_cast<int64_t>(std::trunc(d)));
    }
    return fallback;
  };
  f["items"] = [](const Value& v, const Args& args) {
    bind(args, {}, "items");
    if (v.is_undefined()) return make_view({}, "generator");
    if (!v.is_dict()) throw Fault("Can only get item pairs from a mapping.");
    std::vector<Value> items;
    for (const auto& [k, val] : v.dict().entries) items.push_back(make_list({k, val}, true));
    return make_view(std::move(items), "generator");
  };
  f["join"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"d", "attribute"}, "join");
    const std::string sep = a[0] ? to_str(*a[0]) : "";
    const auto parts = attribute_parts(a[1]);
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      const std::string part = to_str(a[1] ? lookup_path(item, parts) : item);
      check_text_size(uint64_t(out.size()) + (first ? 0 : sep.size()) + part.size(), "the joined string");
      out += (first ? "" : sep) + part;
      first = false;
    }
    return Value(out);
  };
  f["list"] = [](const Value& v, const Args& args) { return bind(args, {}, "list"), make_list(iterate(v)); };
  f["lower"] = [](const Value& v, const Args& args) { return bind(args, {}, "lower"), Value(py_lower(to_str(v))); };
  f["upper"] = [](const Value& v, const Args& args) { return bind(args, {}, "upper"), Value(py_upper(to_str(v))); };
  f["map"] = do_map;
  f["max"] = [](const Value& v, const Args& args) { return min_or_max(v, args, true, "max"); };
  f["min"] = [](const Value& v, const Args& args) { return min_or_max(v, args, false, "min"); };
  f["pprint"] = [](const Value& v, const Args& args) { return bind(args, {}, "pprint"), Value(repr(v)); };
  f["reject"] = [](const Value& v, const Args& args) { return select_or_reject(v, args, false, false, "reject"); };
  f["rejectattr"] = [](const Value& v, const Args& args) {
    return select_or_reject(v, args, false, true, "rejectattr");
  };
  f["select"] = [](const Value& v, const Args& args) { return select_or_reject(v, args, true, false, "select"); };
  f["selectattr"] = [](const Value& v, const Args& args) {
    return select_or_reject(v, args, true, true, "selectattr");
  };
  f["replace"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"old", "new", "count"}, "replace", 2);
    return Value(
        py_replace(to_str(v), to_str(*a[0]), to_str(*a[1]), a[2] && !a[2]->is_none() ? int_param(a[2], -1) : -1));
  };
  f["reverse"] = [](const Value& v, const Args& args) {
    bind(args, {}, "reverse");
    if (v.is_string()) {
      std::u32string s = utf8_decode(v.str());
      std::reverse(s.begin(), s.end());
      return Value(utf8_encode(s));
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    if (v.is_list() && v.list().is_iterator()) return make_list(std::move(items));  // list(value).reverse()
    return make_view(std::move(items), v.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator");
  };
  f["round"] = do_round;
  f["safe"] = [](const Value& v, const Args& args) { return bind(args, {}, "safe"), Value(to_str(v)); };
  f["sort"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"reverse", "case_sensitive", "attribute"}, "sort");
    const std::vector<Value> items = iterate(v);
    std::vector<std::vector<Value>> paths;
    if (a[2] && a[2]->is_string()) {
      for (const auto& one : py_split(a[2]->str(), std::string(","), -1, false))
        paths.push_back(attribute_parts(Value(one)));
    } else {
      paths.push_back(attribute_parts(a[2]));
    }
    std::vector<Value> keys;
    for (const auto& item : items) {
      std::vector<Value> key;
      for (const auto& path : paths)
        key.push_back(flag(a[1]) ? lookup_path(item, path) : ignore_case(lookup_path(item, path)));
      keys.push_back(make_list(std::move(key)));
    }
    return make_list(sorted_by(items, keys, flag(a[0])));
  };
  f["string"] = [](const Value& v, const Args& args) { return bind(args, {}, "string"), Value(to_str(v)); };
  f["sum"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"attribute", "start"}, "sum");
    const auto parts = attribute_parts(a[0]);
    Value total = a[1] ? *a[1] : Value(0);
    for (const auto& item : iterate(v)) total = binary("+", total, a[0] ? lookup_path(item, parts) : item);
    return total;
  };
  f["title"] = [](const Value& v, const Args& args) {
    bind(args, {}, "title");
    // jinja2's own title: words start after whitespace, - ( { [ <; the first letter up, the rest down.
    std::u32string out;
    bool word_start = true;
    for (char32_t c : utf8_decode(to_str(v))) {
      const bool boundary = py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
      if (boundary) {
        out.push_back(c);
        word_start = true;
        continue;
      }
      const std::string one = utf8_encode(std::u32string(1, c));
      out += utf8_decode(word_start ? py_upper(one) : py_lower(one));
      word_start = false;
    }
    return Value(utf8_encode(out));
  };
  f["tojson"] = do_tojson;
  f["trim"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"chars"}, "trim");
    std::optional<std::string> chars;
    if (a[0] && !a[0]->is_none()) chars = to_str(*a[0]);
    return Value(py_strip(to_str(v), chars, true, true));
  };
  f["truncate"] = do_truncate;
  f["unique"] = [](const Value& v, const Args& args) {
    const auto a = bind(args, {"case_sensitive", "attribute"}, "unique");
    const auto parts = attribute_parts(a[1]);
    std::vector<Value> seen, kept;
    for (const auto& item : iterate(v)) {
      Value key = lookup_path(item, parts);
      if (!flag(a[0])) key = ignore_case(key);
      check_hashable(key);
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
        seen.push_back(key);
        kept.push_back(item);
      }
    }
    return make_view(std::move(kept), "generator");
  };
  f["wordcount"] = [](const Value& v, const Args& args) {
    bind(args, {}, "wordcount");
    int64_t words = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(to_str(v))) {
      const bool w = py_isalnum(c) || c == '_';
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value(words);
  };
  return f;
}

}  // namespace

const FilterFn* find_filter(const std::string& name) {
  static const auto filters = make_filters();
  const auto it = filters.find(name);
  return it == filters.end() ? nullptr : &it->second;
}

Value apply_filter(const std::string& name, const Value& input, const Args& args) {
  const FilterFn* fn = find_filter(name);
  if (!fn) throw Fault("No filter named '" + name + "' found.");
  return (*fn)(input, args);
}

}  // namespace tb::text::jinja::detail
