// Python str semantics over UTF-8 (jinja_strings.h).
#include "text/jinja_strings.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "text/jinja_value.h"

namespace tb::text::jinja::detail {

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

char32_t simple_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }
char32_t simple_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t simple_title(char32_t c) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))); }

// Full case mappings Python applies that the simple ones lack (the common ones only).
// The Latin ligatures U+FB00..U+FB06 (ff, fi, fl, ffi, ffl, long st, st) in upper case.
const char32_t* ligature_upper(char32_t c) {
  static const char32_t* const upper[] = {U"FF", U"FI", U"FL", U"FFI", U"FFL", U"ST", U"ST"};
  return c >= 0xFB00 && c <= 0xFB06 ? upper[c - 0xFB00] : nullptr;
}

void append_upper(std::u32string& out, char32_t c) {
  if (c == 0xDF) {  // ß
    out += U"SS";
    return;
  }
  if (const char32_t* l = ligature_upper(c)) {
    out += l;
    return;
  }
  out.push_back(simple_upper(c));
}
void append_lower(std::u32string& out, char32_t c) {
  if (c == 0x130) {  // İ
    out += U"i\u0307";
    return;
  }
  out.push_back(simple_lower(c));
}
void append_title(std::u32string& out, char32_t c) {
  if (c == 0xDF) {
    out += U"Ss";
    return;
  }
  if (const char32_t* l = ligature_upper(c)) {  // title case: the first letter up, the rest down
    out += l[0];
    for (const char32_t* p = l + 1; *p; ++p) out += simple_lower(*p);
    return;
  }
  out.push_back(simple_title(c));
}

bool in_chars(char32_t c, const std::u32string& chars) { return chars.find(c) != std::u32string::npos; }

bool is_line_break(char32_t c) {
  switch (c) {
    case '\n':
    case '\r':
    case 0x0B:
    case 0x0C:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x85:
    case 0x2028:
    case 0x2029:
      return true;
    default:
      return false;
  }
}

// Code point index -> byte offset (index may equal the length).
size_t byte_offset(const std::string& s, int64_t index) {
  size_t i = 0;
  int64_t seen = 0;
  while (i < s.size() && seen < index) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++seen;
  }
  return i;
}

}  // namespace

bool py_isspace(char32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case 0x0B:
    case 0x0C:
    case '\r':
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool py_isalpha(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}
bool py_isdecimal(char32_t c) { return category(c) == UTF8PROC_CATEGORY_ND; }
bool py_isdigit(char32_t c) {
  return py_isdecimal(c) || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x2070 && c <= 0x2079) ||
         (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468);
}
bool py_isnumeric(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}
bool py_isalnum(char32_t c) { return py_isalpha(c) || py_isnumeric(c); }
bool py_islower_char(char32_t c) { return utf8proc_islower(static_cast<utf8proc_int32_t>(c)) != 0; }
bool py_isupper_char(char32_t c) { return utf8proc_isupper(static_cast<utf8proc_int32_t>(c)) != 0; }
bool py_iscased(char32_t c) { return py_islower_char(c) || py_isupper_char(c) || category(c) == UTF8PROC_CATEGORY_LT; }
bool py_is_all_cased(const std::string& s, bool upper) {
  bool any = false;
  for (char32_t c : utf8_decode(s)) {
    if (upper ? py_islower_char(c) : py_isupper_char(c)) return false;
    if (py_iscased(c)) any = true;
  }
  return any;
}
bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string py_upper(const std::string& s) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) append_upper(out, c);
  return utf8_encode(out);
}

std::string py_lower(const std::string& s) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) append_lower(out, c);
  return utf8_encode(out);
}

std::string py_swapcase(const std::string& s) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) {
    if (py_isupper_char(c))
      append_lower(out, c);
    else if (py_islower_char(c))
      append_upper(out, c);
    else
      out.push_back(c);
  }
  return utf8_encode(out);
}

std::string py_title(const std::string& s) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : utf8_decode(s)) {
    if (previous_cased)
      append_lower(out, c);
    else
      append_title(out, c);
    previous_cased = py_iscased(c);
  }
  return utf8_encode(out);
}

std::string py_capitalize(const std::string& s) {
  std::u32string out;
  bool first = true;
  for (char32_t c : utf8_decode(s)) {
    if (first)
      append_title(out, c);
    else
      append_lower(out, c);
    first = false;
  }
  return utf8_encode(out);
}

std::string py_casefold(const std::string& s) {
  utf8proc_uint8_t* folded = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &folded, UTF8PROC_CASEFOLD);
  if (n < 0) return py_lower(s);
  std::string out(reinterpret_cast<const char*>(folded), static_cast<size_t>(n));
  free(folded);
  return out;
}

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string text = utf8_decode(s);
  const std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? in_chars(c, set) : py_isspace(c); };
  size_t begin = 0, end = text.size();
  if (left)
    while (begin < end && strip_it(text[begin])) ++begin;
  if (right)
    while (end > begin && strip_it(text[end - 1])) --end;
  return utf8_encode(text.substr(begin, end - begin));
}

std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw std::invalid_argument("empty separator");
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t at = s.find(*sep, pos);
        if (at == std::string::npos) break;
        parts.push_back(s.substr(pos, at - pos));
        pos = at + sep->size();
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      std::vector<std::string> reversed;
      while (maxsplit < 0 || static_cast<int64_t>(reversed.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t at = s.rfind(*sep, end - sep->size());
        if (at == std::string::npos) break;
        reversed.push_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
      }
      reversed.push_back(s.substr(0, end));
      parts.assign(reversed.rbegin(), reversed.rend());
    }
    return parts;
  }
  // Runs of whitespace; no empty strings.
  const std::u32string text = utf8_decode(s);
  std::vector<std::u32string> words;
  if (!from_right) {
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && py_isspace(text[i])) ++i;
      if (i == text.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
        words.push_back(text.substr(i));
        break;
      }
      size_t j = i;
      while (j < text.size() && !py_isspace(text[j])) ++j;
      words.push_back(text.substr(i, j - i));
      i = j;
    }
  } else {
    size_t i = text.size();
    while (i > 0) {
      while (i > 0 && py_isspace(text[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
        words.push_back(text.substr(0, i));
        break;
      }
      size_t j = i;
      while (j > 0 && !py_isspace(text[j - 1])) --j;
      words.push_back(text.substr(j, i - j));
      i = j;
    }
    std::reverse(words.begin(), words.end());
  }
  for (const auto& w : words) parts.push_back(utf8_encode(w));
  return parts;
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  const std::u32string text = utf8_decode(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    if (!is_line_break(text[i])) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    if (text[i] == '\r' && end < text.size() && text[end] == '\n') ++end;
    lines.push_back(utf8_encode(text.substr(start, (keepends ? end : i) - start)));
    start = i = end;
  }
  if (start < text.size()) lines.push_back(utf8_encode(text.substr(start)));
  return lines;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count) {
  std::string out;
  int64_t done = 0;
  // Bounded as it grows: "x" * 1000000 with "x" replaced by a long string reached gigabytes.
  const auto grow = [&](size_t rest) { check_text_size(uint64_t(out.size()) + replacement.size() + rest, "the replaced string"); };
  if (old.empty()) {
    const std::u32string text = utf8_decode(s);
    for (char32_t c : text) {
      if (count < 0 || done < count) {
        grow(4);
        out += replacement;
        ++done;
      }
      utf8_append(out, c);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    grow(s.size() - at - old.size());
    out += replacement;
    pos = at + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

int64_t py_find(const std::string& s, const std::string& sub, std::optional<int64_t> start, std::optional<int64_t> end,
                bool from_right) {
  const int64_t n = static_cast<int64_t>(utf8_length(s));
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  const int64_t b = start ? clamp(*start) : 0;
  const int64_t e = end ? clamp(*end) : n;
  if (b > e) return -1;
  const size_t bb = byte_offset(s, b), eb = byte_offset(s, e);
  const std::string window = s.substr(bb, eb - bb);
  const size_t at = from_right ? window.rfind(sub) : window.find(sub);
  if (at == std::string::npos) return -1;
  return b + static_cast<int64_t>(utf8_length(window.substr(0, at)));
}

int64_t py_count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::string py_repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x7F || py_isprintable(c)) {
      utf8_append(out, c);
    } else {
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += quote;
  return out;
}

SliceIndices resolve_slice(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step) {
  SliceIndices r{};
  r.step = step.value_or(1);
  if (r.step == 0) throw std::invalid_argument("slice step cannot be zero");
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v;
    if (i < 0) {
      i += length;
      if (i < 0) i = r.step < 0 ? -1 : 0;
    } else if (i >= length) {
      i = r.step < 0 ? length - 1 : length;
    }
    return i;
  };
  r.start = adjust(start, r.step < 0 ? length - 1 : 0);
  r.stop = adjust(stop, r.step < 0 ? -1 : length);
  if (r.step > 0)
    r.count = r.stop > r.start ? (r.stop - r.start - 1) / r.step + 1 : 0;
  else
    r.count = r.start > r.stop ? (r.start - r.stop - 1) / (-r.step) + 1 : 0;
  return r;
}

}  // namespace tb::text::jinja::detail
