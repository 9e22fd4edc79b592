// Python's string formatting: printf-style `fmt % args` (the % operator and the format filter) and
// str.format with the format-spec mini-language, for the value types templates format.
#include <cmath>
#include <cstdio>

#include "text/jinja_builtins.h"
#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {
namespace {

// A width or precision in a format ("%0999999999d", "{:>9999999999}", "%.999999999f") is read within
// what a template may make: the digits overflowed an int, or asked for gigabytes of padding.
template <class Text>
int format_number(const Text& text, size_t& i) {
  int64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + (text[i] - '0');
    if (value > int64_t(kMaxTextBytes))
      throw Fault("a format width or precision larger than a template may make (" +
                  std::to_string(kMaxTextBytes >> 20) + " MiB)");
  }
  return static_cast<int>(value);
}

std::string int_to_base(int64_t v, int base, bool upper) {
  if (v == 0) return "0";
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  uint64_t u = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  std::string out;
  while (u) {
    out.insert(out.begin(), digits[u % static_cast<uint64_t>(base)]);
    u /= static_cast<uint64_t>(base);
  }
  return (v < 0 ? "-" : "") + out;
}

std::string c_format(const std::string& spec, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), v);
  return buf;
}

int64_t number_as_int(const Value& v, char type) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float()) {
    if (type == 'x' || type == 'X' || type == 'o' || type == 'c')
      throw Fault(std::string("%") + type + " format: an integer is required, not float");
    return static_cast<int64_t>(std::trunc(v.as_float()));
  }
  throw Fault(std::string("%") + type + " format: a real number is required, not " + type_name(v));
}

double number_as_float(const Value& v, char type) {
  if (v.is_number()) return v.as_float();
  throw Fault(std::string("%") + type + " format: a real number is required, not " + type_name(v));
}

// Pads `body` (its sign first when zero-padding) to `width` code points.
std::string pad_field(std::string body, int width, bool left, bool zero) {
  const int len = static_cast<int>(utf8_length(body));
  if (width <= len) return body;
  const std::string fill(static_cast<size_t>(width - len), zero && !left ? '0' : ' ');
  if (left) return body + fill;
  if (zero && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' '))
    return body.substr(0, 1) + fill + body.substr(1);
  return fill + body;
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  if (args.is_tuple())
    positional = args.list().items;
  else if (args.is_dict())
    mapping = &args;
  else
    positional.push_back(args);
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw Fault("incomplete format");
    const Value* value = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos) throw Fault("incomplete format key");
      if (!mapping) throw Fault("format requires a mapping");
      value = mapping->dict().find(fmt.substr(i + 1, close - i - 1));
      if (!value) throw Fault("'" + fmt.substr(i + 1, close - i - 1) + "'");
      used_mapping = true;
      i = close + 1;
    }
    bool left = false, zero = false, plus = false, space = false, alt = false;
    for (; i < fmt.size() && std::string("-0+ #").find(fmt[i]) != std::string::npos; ++i) {
      left |= fmt[i] == '-';
      zero |= fmt[i] == '0';
      plus |= fmt[i] == '+';
      space |= fmt[i] == ' ';
      alt |= fmt[i] == '#';
    }
    int width = format_number(fmt, i), precision = -1;
    if (i < fmt.size() && fmt[i] == '.') precision = format_number(fmt, ++i);
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) throw Fault("incomplete format");
    const char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!value) {
      if (mapping && !positional.size()) throw Fault("format requires a mapping");
      if (next >= positional.size()) throw Fault("not enough arguments for format string");
      value = &positional[next++];
    }
    std::string body;
    const std::string sign = plus ? "+" : space ? " " : "";
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        body = type == 's' ? to_str(*value) : repr(*value);
        if (precision >= 0) body = utf8_encode(utf8_decode(body).substr(0, static_cast<size_t>(precision)));
        zero = false;
        break;
      }
      case 'd':
      case 'i':
      case 'u': {
        const int64_t n = number_as_int(*value, type);
        body = (n >= 0 ? sign : "") + std::to_string(n);
        break;
      }
      case 'x':
      case 'X':
      case 'o': {
        const int64_t n = number_as_int(*value, type);
        std::string digits = int_to_base(n < 0 ? -n : n, type == 'o' ? 8 : 16, type == 'X');
        if (alt) digits = (type == 'o' ? "0o" : type == 'x' ? "0x" : "0X") + digits;
        body = (n < 0 ? "-" : sign) + digits;
        break;
      }
      case 'c': {
        if (value->is_string() && utf8_length(value->str()) == 1) {
          body = value->str();
        } else {
          body.clear();
          const int64_t code = number_as_int(*value, 'c');
          if (code < 0 || code > 0x10FFFF) throw Fault("%c arg not in range(0x110000)");  // Python's words
          utf8_append(body, static_cast<char32_t>(code));
        }
        zero = false;
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        const double f = number_as_float(*value, type);
        std::string spec = "%";
        if (plus) spec += '+';
        if (space) spec += ' ';
        if (alt) spec += '#';
        spec += "." + std::to_string(precision < 0 ? 6 : precision) + type;
        body = c_format(spec, f);
        break;
      }
      default:
        throw Fault(std::string("unsupported format character '") + type + "'");
    }
    out += pad_field(body, width, left, zero);
  }
  if (!used_mapping && !mapping && next < positional.size())
    throw Fault("not all arguments converted during string formatting");
  return out;
}

namespace {

// One replacement field's format spec: [[fill]align][sign][#][0][width][,|_][.precision][type].
std::string format_spec(const Value& v, const std::string& spec) {
  std::u32string s = utf8_decode(spec);
  size_t i = 0;
  char32_t fill = ' ';
  char align = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    fill = s[0];
    align = static_cast<char>(s[1]);
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    align = static_cast<char>(s[0]);
    i = 1;
  }
  char sign = '-';
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sign = static_cast<char>(s[i++]);
  bool alt = false;
  if (i < s.size() && s[i] == '#') alt = true, ++i;
  if (i < s.size() && s[i] == '0') {
    if (!align) fill = '0', align = '=';
    ++i;
  }
  const int width = format_number(s, i);
  char grouping = 0;
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) grouping = static_cast<char>(s[i++]);
  int precision = -1;
  if (i < s.size() && s[i] == '.') precision = format_number(s, ++i);
  char type = i < s.size() ? static_cast<char>(s[i++]) : 0;
  if (i != s.size()) throw Fault("Invalid format specifier");

  std::string body, prefix;
  const bool numeric = v.is_number();
  if (!numeric || type == 's') {
    if (type && type != 's')
      throw Fault(std::string("Unknown format code '") + type + "' for object of type '" + type_name(v) + "'");
    body = to_str(v);
    if (precision >= 0) body = utf8_encode(utf8_decode(body).substr(0, static_cast<size_t>(precision)));
    if (!align) align = '<';
  } else {
    const bool as_int = (v.is_int() || v.is_bool()) && (type == 0 || type == 'd' || type == 'x' || type == 'X' ||
                                                        type == 'o' || type == 'b' || type == 'c');
    if (as_int) {
      const int64_t n = v.as_int();
      const int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
      body = int_to_base(n < 0 ? -n : n, base == 2 ? 10 : base, type == 'X');
      if (base == 2) {
        body.clear();
        for (uint64_t u = static_cast<uint64_t>(n < 0 ? -n : n); u; u >>= 1)
          body.insert(body.begin(), static_cast<char>('0' + (u & 1)));
        if (body.empty()) body = "0";
      }
      if (grouping && base == 10) {
        for (int at = static_cast<int>(body.size()) - 3; at > 0; at -= 3)
          body.insert(static_cast<size_t>(at), 1, grouping);
      }
      if (alt && base != 10) prefix = type == 'x' ? "0x" : type == 'X' ? "0X" : type == 'o' ? "0o" : "0b";
      if (n < 0)
        prefix = "-" + prefix;
      else if (sign != '-')
        prefix = std::string(1, sign) + prefix;
    } else {
      const double f = v.as_float();
      const double a = std::fabs(f);
      if (type == 0 && precision < 0) {
        body = format_float(a);
      } else {
        const char t = type == 0 ? 'g' : type == '%' ? 'f' : type;
        if (std::string("eEfFgG").find(t) == std::string::npos)
          throw Fault(std::string("Unknown format code '") + type + "' for object of type 'float'");
        body = c_format("%" + std::string(alt ? "#" : "") + "." + std::to_string(precision < 0 ? 6 : precision) + t,
                        type == '%' ? a * 100 : a);
        if (type == '%') body += '%';
      }
      if (grouping) {
        const size_t dot = std::min(body.find('.'), body.find_first_of("eE%"));
        for (int at = static_cast<int>(std::min(dot, body.size())) - 3; at > 0; at -= 3)
          body.insert(static_cast<size_t>(at), 1, grouping);
      }
      if (std::signbit(f) && !std::isnan(f))
        prefix = "-";
      else if (sign != '-')
        prefix = std::string(1, sign);
    }
    if (!align) align = '>';
  }
  const int len = static_cast<int>(utf8_length(prefix + body));
  std::string fill_text;
  utf8_append(fill_text, fill);
  auto repeat = [&](int n) {
    std::string out;
    for (int k = 0; k < n; ++k) out += fill_text;
    return out;
  };
  if (width <= len) return prefix + body;
  const int margin = width - len;
  switch (align) {
    case '<':
      return prefix + body + repeat(margin);
    case '^':
      return repeat(margin / 2) + prefix + body + repeat(margin - margin / 2);
    case '=':
      return prefix + repeat(margin) + body;
    default:
      return repeat(margin) + prefix + body;
  }
}

}  // namespace

std::string brace_format(const std::string& fmt, const Args& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw Fault("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    // {field_name[!conversion][:format_spec]}; nested braces in the spec are not supported.
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw Fault("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.erase(colon);
    }
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
      field.erase(bang);
    }
    const size_t path_at = field.find_first_of(".[");
    const std::string head = field.substr(0, path_at);
    Value value;
    if (head.empty() || head.find_first_not_of("0123456789") == std::string::npos) {
      const size_t index = head.empty() ? auto_index++ : std::stoul(head);
      if (index >= args.positional.size())
        throw Fault("Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      value = args.positional[index];
    } else {
      bool found = false;
      for (const auto& [k, v] : args.keywords)
        if (k == head) value = v, found = true;
      if (!found) throw Fault("'" + head + "'");
    }
    for (size_t p = path_at; p != std::string::npos && p < field.size();) {
      if (field[p] == '.') {
        const size_t end = field.find_first_of(".[", p + 1);
        value = get_attribute(value, field.substr(p + 1, end == std::string::npos ? std::string::npos : end - p - 1));
        p = end;
      } else {
        const size_t end = field.find(']', p);
        if (end == std::string::npos) throw Fault("Missing ']' in format string");
        const std::string key = field.substr(p + 1, end - p - 1);
        const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        value = get_item(value, digits ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
        p = end + 1;
      }
    }
    if (conversion == 'r' || conversion == 'a')
      value = Value(repr(value));
    else if (conversion == 's')
      value = Value(to_str(value));
    out += format_spec(value, spec);
  }
  return out;
}

}  // namespace tb::text::jinja::detail
