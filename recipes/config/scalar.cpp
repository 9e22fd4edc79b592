#include "config/scalar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <regex>

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
  static const std::regex kDecimal("[-+]?[0-9][0-9_]*");
  static const std::regex kHex("[-+]?0x[0-9a-fA-F_]+");
  bool hex = std::regex_match(t, kHex);
  if (!hex && !std::regex_match(t, kDecimal)) return std::nullopt;
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
  // OmegaConf's loader adds `1e-4` and `1.` forms to YAML 1.1's floats.
  static const std::regex kFloat(
      "[-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+]?[0-9]+)?"
      "|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
      "|[-+]?\\.[0-9][0-9_]*([eE][-+]?[0-9]+)?");
  static const std::regex kInf("[-+]?\\.(inf|Inf|INF)");
  static const std::regex kNan("\\.(nan|NaN|NAN)");
  if (std::regex_match(t, kInf)) return t[0] == '-' ? -INFINITY : INFINITY;
  if (std::regex_match(t, kNan)) return NAN;
  if (auto i = parse_int(t)) return static_cast<double>(*i);
  if (!std::regex_match(t, kFloat)) return std::nullopt;
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
