// Jinja's lexer with jinja2's whitespace rules (jinja_lexer.h).
#include "text/jinja_lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "text/jinja.h"
#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {
namespace {

// jinja2 reads "\r\n", "\r" and "\n" as line breaks, writes "\n", and (keep_trailing_newline=False)
// drops one trailing line break of the template.
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_space_at(const std::string& s, size_t pos, size_t* width) {
  const unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    *width = 1;
    return py_isspace(c);
  }
  size_t n = 1;
  while (pos + n < s.size() && (static_cast<unsigned char>(s[pos + n]) & 0xC0) == 0x80) ++n;
  *width = n;
  const std::u32string cp = utf8_decode(s.substr(pos, n));
  return cp.size() == 1 && py_isspace(cp[0]);
}

size_t skip_space(const std::string& s, size_t pos) {
  size_t w = 0;
  while (pos < s.size() && is_space_at(s, pos, &w)) pos += w;
  return pos;
}

std::string rstrip_space(const std::string& text) { return py_strip(text, std::nullopt, false, true); }

bool all_space(const std::string& text) {
  if (text.empty()) return false;
  size_t w = 0;
  for (size_t i = 0; i < text.size(); i += w)
    if (!is_space_at(text, i, &w)) return false;
  return true;
}

bool starts_with(const std::string& s, size_t pos, const char* prefix) {
  const size_t n = std::strlen(prefix);
  return pos + n <= s.size() && s.compare(pos, n, prefix) == 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
bool is_name_char(unsigned char c) { return is_name_start(c) || is_digit(static_cast<char>(c)); }

class Lexer {
 public:
  Lexer(const std::string& source, const std::string& name) : src_(normalize_newlines(source)), name_(name) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      const size_t tag = find_tag_start(pos);
      if (tag == std::string::npos) {
        push_data(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[tag + 1];
      const size_t after_open = tag + 2;
      const char sign =
          after_open < src_.size() && (src_[after_open] == '-' || src_[after_open] == '+') ? src_[after_open] : 0;
      size_t raw_end = 0;
      const bool raw = kind == '%' && match_raw(tag, "raw", &raw_end, nullptr);
      push_data(strip_before(src_.substr(pos, tag - pos), sign, kind != '{', line_starting), pos);

      if (raw) {
        pos = raw_end;
        line_starting = src_[pos - 1] == '\n';
        size_t end_at = pos, end_after = 0;
        char end_sign = 0;
        while (true) {
          end_at = src_.find("{%", end_at);
          if (end_at == std::string::npos) fail(tag, "Missing end of raw directive");
          if (match_raw(end_at, "endraw", &end_after, &end_sign)) break;
          ++end_at;
        }
        push_data(strip_before(src_.substr(pos, end_at - pos), end_sign, true, line_starting), pos);
        pos = end_after;
        line_starting = src_[pos - 1] == '\n';
        continue;
      }
      if (kind == '#') {
        pos = comment_end(tag, after_open + (sign ? 1 : 0));
        line_starting = src_[pos - 1] == '\n';
        continue;
      }
      push(kind == '{' ? Token::Type::VariableBegin : Token::Type::BlockBegin, "", tag);
      pos = lex_tag(kind, after_open + (sign ? 1 : 0));
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    push(Token::Type::Eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    const auto [line, column] = where(pos);
    throw TemplateError(name_, line, column, message);
  }

  // Line and column (in characters) of `pos`. Tokens come in order: the column is counted on from the last
  // position asked on the same line, not from the line's start (which made one long line quadratic).
  std::pair<int, int> where(size_t pos) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    const size_t start = *it;
    size_t from = start;
    int column = 1;
    if (last_where_.line_start == start && last_where_.pos >= start && last_where_.pos <= pos) {
      from = last_where_.pos;
      column = last_where_.column;
    }
    column += static_cast<int>(utf8_length(src_.substr(from, pos - from)));
    last_where_ = {pos, start, column};
    return {static_cast<int>(it - line_starts_.begin()) + 1, column};
  }

  void push(Token::Type type, std::string text, size_t pos) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    std::tie(t.line, t.column) = where(pos);
    tokens_.push_back(std::move(t));
  }

  void push_data(std::string text, size_t pos) {
    if (!text.empty()) push(Token::Type::Data, std::move(text), pos);
  }

  size_t find_tag_start(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  // The text before a tag: `-` strips all whitespace; otherwise lstrip_blocks removes the spaces and tabs
  // between a line start and a block or comment tag (not a {{ }} tag).
  static std::string strip_before(std::string text, char sign, bool lstrip, bool line_starting) {
    if (sign == '-') return rstrip_space(text);
    if (sign == '+' || !lstrip) return text;
    const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) text.erase(l_pos);
    return text;
  }

  // `{%[-+]? word (-%}\s* | %})` at `at` for word raw; endraw also takes `+%}` and the trim_blocks newline.
  bool match_raw(size_t at, const char* word, size_t* end, char* sign) const {
    size_t p = at + 2;
    char s = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) s = src_[p++];
    p = skip_space(src_, p);
    if (!starts_with(src_, p, word)) return false;
    p = skip_space(src_, p + std::strlen(word));
    const bool end_tag = std::strcmp(word, "endraw") == 0;
    if (end_tag && starts_with(src_, p, "+%}")) {
      *end = p + 3;
    } else if (starts_with(src_, p, "-%}")) {
      *end = skip_space(src_, p + 3);
    } else if (starts_with(src_, p, "%}")) {
      *end = p + 2;
      if (end_tag && *end < src_.size() && src_[*end] == '\n') ++*end;
    } else {
      return false;
    }
    if (sign) *sign = s;
    return true;
  }

  size_t comment_end(size_t tag, size_t p) const {
    for (; p < src_.size(); ++p) {
      if (starts_with(src_, p, "+#}")) return p + 3;
      if (starts_with(src_, p, "-#}")) return skip_space(src_, p + 3);
      if (starts_with(src_, p, "#}")) return p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n');
    }
    fail(tag, "Missing end of comment tag");
  }

  // The tokens of a {{ }} or {% %} tag; returns the position after its end delimiter (and what trimming
  // takes after it).
  size_t lex_tag(char kind, size_t p) {
    std::vector<char> balance;
    while (p < src_.size()) {
      if (balance.empty()) {
        if (kind == '%') {
          if (starts_with(src_, p, "+%}")) return end_tag(Token::Type::BlockEnd, p, p + 3);
          if (starts_with(src_, p, "-%}")) return end_tag(Token::Type::BlockEnd, p, skip_space(src_, p + 3));
          if (starts_with(src_, p, "%}")) {
            const size_t e = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n');
            return end_tag(Token::Type::BlockEnd, p, e);
          }
        } else {
          if (starts_with(src_, p, "-}}")) return end_tag(Token::Type::VariableEnd, p, skip_space(src_, p + 3));
          if (starts_with(src_, p, "}}")) return end_tag(Token::Type::VariableEnd, p, p + 2);
        }
      }
      size_t w = 0;
      if (is_space_at(src_, p, &w)) {
        p += w;
        continue;
      }
      const char c = src_[p];
      if (is_digit(c)) {
        p = lex_number(p);
      } else if (is_name_start(static_cast<unsigned char>(c))) {
        size_t e = p;
        while (e < src_.size() && is_name_char(static_cast<unsigned char>(src_[e]))) ++e;
        push(Token::Type::Name, src_.substr(p, e - p), p);
        p = e;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, balance);
      }
    }
    return p;  // unclosed tag: the parser reports the end of the template
  }

  size_t end_tag(Token::Type type, size_t at, size_t end) {
    push(type, "", at);
    return end;
  }

  size_t digits(size_t p, bool (*ok)(char)) const {
    // (\d+_)*\d+ style runs: digits with single underscores between them.
    size_t e = p;
    while (e < src_.size() && (ok(src_[e]) || (src_[e] == '_' && e > p && e + 1 < src_.size() && ok(src_[e + 1])))) ++e;
    return e;
  }

  size_t lex_number(size_t p) {
    auto dec = [](char ch) { return is_digit(ch); };
    const bool after_dot = p > 0 && src_[p - 1] == '.';
    // float: digits ((. digits)? e[+-]?digits | . digits)
    if (!after_dot) {
      size_t e = digits(p, dec);
      size_t f = e;
      bool is_float = false;
      if (f < src_.size() && src_[f] == '.' && f + 1 < src_.size() && is_digit(src_[f + 1])) {
        f = digits(f + 1, dec);
        is_float = true;
      }
      if (f < src_.size() && (src_[f] == 'e' || src_[f] == 'E')) {
        size_t x = f + 1;
        if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
        if (x < src_.size() && is_digit(src_[x])) {
          f = digits(x, dec);
          is_float = true;
        }
      }
      if (is_float) {
        std::string text = src_.substr(p, f - p);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        push(Token::Type::Float, text, p);
        tokens_.back().floating = std::strtod(text.c_str(), nullptr);  // no range error: 1e400 is inf, as in Python
        return f;
      }
    }
    int base = 10;
    size_t start = p, e;
    if (src_[p] == '0' && p + 1 < src_.size() && std::strchr("bBoOxX", src_[p + 1]) && src_[p + 1] != 0) {
      const char b = static_cast<char>(src_[p + 1] | 0x20);
      base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
      start = p + 2;
      e = start;
      auto ok = [&](char ch) {
        const char l = static_cast<char>(ch | 0x20);
        return base == 2   ? (ch == '0' || ch == '1')
               : base == 8 ? (ch >= '0' && ch <= '7')
                           : (is_digit(ch) || (l >= 'a' && l <= 'f'));
      };
      while (e < src_.size() && (ok(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && ok(src_[e + 1])))) ++e;
      if (e == start) fail(p, "unexpected char '" + std::string(1, src_[p + 1]) + "'");
    } else if (src_[p] == '0') {
      e = p + 1;
      while (e < src_.size() && (src_[e] == '0' || (src_[e] == '_' && e + 1 < src_.size() && src_[e + 1] == '0'))) ++e;
    } else {
      e = digits(p, dec);
    }
    std::string text = src_.substr(start, e - start);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    // Python's integers have no bound, ours 64 bits: a larger literal is an error, never a wrapped number.
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, base);
    if (errno == ERANGE || value > static_cast<unsigned long long>(INT64_MAX))
      fail(p, "integer literal " + src_.substr(p, std::min<size_t>(e - p, 40)) + " is larger than 64 bits");
    push(Token::Type::Integer, src_.substr(p, e - p), p);
    tokens_.back().integer = static_cast<int64_t>(value);
    return e;
  }

  size_t lex_string(size_t p) {
    const char quote = src_[p];
    size_t e = p + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size())
      fail(p, "unexpected char " + py_repr_string(std::string(1, quote)) + " at " + std::to_string(p));
    push(Token::Type::String, unescape(src_.substr(p + 1, e - p - 1), p), p);
    return e + 1;
  }

  // Python's unicode-escape decoding of a string literal's body.
  std::string unescape(const std::string& body, size_t at) const {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] != '\\' || i + 1 >= body.size()) {
        out += body[i];
        continue;
      }
      const char c = body[++i];
      auto hex = [&](size_t count) {
        const std::string h = i + 1 < body.size() ? body.substr(i + 1, count) : std::string();
        if (h.size() != count || h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          fail(at, "truncated \\" + std::string(1, c) + std::string(count, 'X') + " escape");
        i += count;
        utf8_append(out, static_cast<char32_t>(std::stoul(h, nullptr, 16)));
      };
      switch (c) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        default:
          if (c >= '0' && c <= '7') {
            size_t n = 1;
            while (n < 3 && i + n < body.size() && body[i + n] >= '0' && body[i + n] <= '7') ++n;
            utf8_append(out, static_cast<char32_t>(std::stoul(body.substr(i, n), nullptr, 8)));
            i += n - 1;
          } else {
            out += '\\';
            out += c;
          }
      }
    }
    return out;
  }

  size_t lex_operator(size_t p, std::vector<char>& balance) {
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two) {
      if (starts_with(src_, p, op)) {
        push(Token::Type::Operator, op, p);
        return p + 2;
      }
    }
    const char c = src_[p];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c) || c == 0) {
      const size_t w = std::min<size_t>(src_.size() - p, (static_cast<unsigned char>(c) >= 0x80) ? 4 : 1);
      fail(p, "unexpected char " + py_repr_string(utf8_encode(utf8_decode(src_.substr(p, w)).substr(0, 1))) + " at " +
                  std::to_string(p));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(p, std::string("unexpected '") + c + "'");
      const char expected = balance.back();
      balance.pop_back();
      if (expected != c) fail(p, std::string("unexpected '") + c + "', expected '" + expected + "'");
    }
    push(Token::Type::Operator, std::string(1, c), p);
    return p + 1;
  }

  std::string src_;
  const std::string& name_;
  std::vector<size_t> line_starts_;
  struct Where {
    size_t pos = 0, line_start = 0;
    int column = 1;
  };
  mutable Where last_where_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& name) { return Lexer(source, name).run(); }

}  // namespace tb::text::jinja::detail
