#include "config/scalar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <yaml-cpp/yaml.h>

namespace tb::config {
namespace {

const std::string kCoreTagPrefix = "tag:yaml.org,2002:";

std::string without_underscores(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  return s;
}

bool is_null_text(const std::string& t) { return t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL"; }

// Python's repr() of a float: shortest round-trip digits, exponent form outside [1e-4, 1e16).
std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.25e-05"
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (point >= static_cast<int>(digits.size())) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return negative ? "-" + out : out;
}

}  // namespace

namespace {

// The number forms, matched by scanning: std::regex recurses once per character and overflows the
// stack on a scalar of some 50,000 digits.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

size_t skip_sign(const std::string& t, size_t i) { return i < t.size() && (t[i] == '-' || t[i] == '+') ? i + 1 : i; }

// [0-9][0-9_]* from i (first_needed: the first character must be a digit); returns the end, or npos.
size_t digit_run(const std::string& t, size_t i, bool first_needed = true) {
  if (first_needed && (i >= t.size() || !is_digit(t[i]))) return std::string::npos;
  while (i < t.size() && (is_digit(t[i]) || t[i] == '_')) ++i;
  return i;
}

// [eE][-+]?[0-9]+ from i; returns the end, or npos.
size_t exponent(const std::string& t, size_t i) {
  if (i >= t.size() || (t[i] != 'e' && t[i] != 'E')) return std::string::npos;
  i = skip_sign(t, i + 1);
  if (i >= t.size() || !is_digit(t[i])) return std::string::npos;
  while (i < t.size() && is_digit(t[i])) ++i;
  return i;
}

bool ends_at(const std::string& t, size_t i) { return i == t.size(); }
bool ends_at_or_exponent(const std::string& t, size_t i) { return ends_at(t, i) || ends_at(t, exponent(t, i)); }

// [-+]?[0-9][0-9_]*
bool is_decimal_int(const std::string& t) { return ends_at(t, digit_run(t, skip_sign(t, 0))); }

// [-+]?0x[0-9a-fA-F_]+
bool is_hex_int(const std::string& t) {
  size_t i = skip_sign(t, 0);
  if (t.compare(i, 2, "0x") != 0) return false;
  i += 2;
  const size_t first = i;
  while (i < t.size() && (is_hex_digit(t[i]) || t[i] == '_')) ++i;
  return i > first && ends_at(t, i);
}

// YAML 1.1's floats with the `1e-4` and `1.` forms OmegaConf's loader adds:
// [-+]?D(D|_)*\.(D|_)*E? | [-+]?D(D|_)*E | [-+]?\.D(D|_)*E? (E: the exponent).
bool is_float_form(const std::string& t) {
  const size_t start = skip_sign(t, 0);
  if (start < t.size() && t[start] == '.') {
    const size_t end = digit_run(t, start + 1);
    return end != std::string::npos && ends_at_or_exponent(t, end);
  }
  const size_t whole = digit_run(t, start);
  if (whole == std::string::npos) return false;
  if (whole < t.size() && t[whole] == '.') return ends_at_or_exponent(t, digit_run(t, whole + 1, false));
  return ends_at(t, exponent(t, whole));
}

}  // namespace

std::optional<bool> parse_bool(const std::string& t) {
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* w : kTrue)
    if (t == w) return true;
  for (const char* w : kFalse)
    if (t == w) return false;
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string& t) {
  const bool hex = is_hex_int(t);
  if (!hex && !is_decimal_int(t)) return std::nullopt;
  std::string s = without_underscores(t);
  bool negative = s[0] == '-';
  if (s[0] == '-' || s[0] == '+') s.erase(0, 1);
  if (hex) s.erase(0, 2);
  uint64_t magnitude = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), magnitude, hex ? 16 : 10);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  if (magnitude > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<double> parse_float(const std::string& t) {
  const size_t sign = t.empty() || (t[0] != '-' && t[0] != '+') ? 0 : 1;
  const std::string body = t.substr(sign);
  if (body == ".inf" || body == ".Inf" || body == ".INF") return t[0] == '-' ? -INFINITY : INFINITY;
  if (sign == 0 && (body == ".nan" || body == ".NaN" || body == ".NAN")) return NAN;
  if (auto i = parse_int(t)) return static_cast<double>(*i);
  if (!is_float_form(t)) return std::nullopt;
  std::string s = without_underscores(t);
  try {
    return std::stod(s);
  } catch (const std::out_of_range&) {
    return s[0] == '-' ? -INFINITY : INFINITY;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ScalarKind classify_plain(const std::string& t) {
  if (is_null_text(t)) return ScalarKind::Null;
  if (parse_bool(t)) return ScalarKind::Bool;
  if (parse_int(t)) return ScalarKind::Int;
  if (parse_float(t)) return ScalarKind::Float;
  return ScalarKind::String;
}

ScalarKind classify(const std::string& tag, const std::string& text) {
  if (tag == "!") return ScalarKind::String;  // quoted or block scalar
  if (tag.rfind(kCoreTagPrefix, 0) == 0) {
    std::string core = tag.substr(kCoreTagPrefix.size());
    if (core == "str") return ScalarKind::String;
    if (core == "null") return ScalarKind::Null;
    if (core == "bool" && parse_bool(text)) return ScalarKind::Bool;
    if (core == "int" && parse_int(text)) return ScalarKind::Int;
    if (core == "float" && parse_float(text)) return ScalarKind::Float;
    return ScalarKind::String;
  }
  return classify_plain(text);
}

ScalarKind classify(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return ScalarKind::Null;
  if (!node.IsScalar()) return ScalarKind::String;
  return classify(node.Tag(), node.Scalar());
}

std::string python_str(const std::string& text, ScalarKind kind) {
  switch (kind) {
    case ScalarKind::Null: return "None";
    case ScalarKind::Bool: return *parse_bool(text) ? "True" : "False";
    case ScalarKind::Int: return std::to_string(*parse_int(text));
    case ScalarKind::Float: return python_float_repr(*parse_float(text));
    case ScalarKind::String: return text;
  }
  return text;
}

const char* describe(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::Null: return "null";
    case ScalarKind::Bool: return "a boolean";
    case ScalarKind::Int: return "an integer";
    case ScalarKind::Float: return "a number";
    case ScalarKind::String: return "a string";
  }
  return "a value";
}

}  // namespace tb::config
