#include "data/pretokenize.h"

#include "data/unicode_text.h"

namespace tb::data {
namespace {

using unicode::CodePoint;

constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kGpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

class Matcher {
 public:
  explicit Matcher(const std::string& text) : cps_(unicode::decode_utf8(text)) {}
  size_t size() const { return cps_.size(); }
  char32_t at(size_t i) const { return cps_[i].value; }
  bool letter(size_t i) const { return i < size() && unicode::is_letter(at(i)); }
  bool number(size_t i) const { return i < size() && unicode::is_number(at(i)); }
  bool space(size_t i) const { return i < size() && unicode::is_whitespace(at(i)); }
  bool newline(size_t i) const { return i < size() && (at(i) == '\r' || at(i) == '\n'); }
  bool other(size_t i) const { return i < size() && !space(i) && !letter(i) && !number(i); }
  size_t byte_begin(size_t i) const { return i < size() ? cps_[i].begin : (cps_.empty() ? 0 : cps_.back().end); }

  // Length of a contraction ('s 't 're 've 'm 'll 'd) at i, 0 if none.
  size_t contraction(size_t i, bool ignore_case) const {
    if (at(i) != '\'') return 0;
    for (const char* suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
      size_t k = 0;
      for (; suffix[k]; ++k) {
        if (i + 1 + k >= size()) break;
        char32_t c = at(i + 1 + k);
        if (ignore_case && c >= 'A' && c <= 'Z') c = c - 'A' + 'a';
        if (c != static_cast<char32_t>(suffix[k])) break;
      }
      if (!suffix[k]) return 1 + k;
    }
    return 0;
  }

  size_t run_of_space(size_t i) const {
    while (space(i)) ++i;
    return i;
  }

  // \s*[\r\n]+ : through the last newline of the whitespace run; \s+(?!\S) and \s+ after it.
  size_t whitespace(size_t i, bool newline_rule) const {
    const size_t run_end = run_of_space(i);
    if (newline_rule) {
      for (size_t k = run_end; k > i; --k)
        if (newline(k - 1)) return k;
    }
    if (run_end == size()) return run_end;  // \s+(?!\S) at the end of the text
    if (run_end - 1 > i) return run_end - 1;  // leave the last space to the next word
    return run_end;                            // \s+
  }

  size_t llama3(size_t i) const {
    if (size_t n = contraction(i, true)) return i + n;
    {  // [^\r\n\p{L}\p{N}]?\p{L}+
      size_t j = i;
      if (!newline(j) && !letter(j) && !number(j) && letter(j + 1)) ++j;
      if (letter(j)) {
        while (letter(j)) ++j;
        return j;
      }
    }
    if (number(i)) {  // \p{N}{1,3}
      size_t j = i;
      while (j < i + 3 && number(j)) ++j;
      return j;
    }
    {  //  ?[^\s\p{L}\p{N}]+[\r\n]*
      size_t j = i;
      if (at(j) == ' ' && other(j + 1)) ++j;
      if (other(j)) {
        while (other(j)) ++j;
        while (newline(j)) ++j;
        return j;
      }
    }
    if (space(i)) return whitespace(i, true);
    return i + 1;  // unreachable: every code point is a letter, number, space or other
  }

  size_t gpt2(size_t i) const {
    if (size_t n = contraction(i, false)) return i + n;
    const size_t j = (at(i) == ' ' && i + 1 < size() && !space(i + 1)) ? i + 1 : i;
    if (letter(j)) {
      size_t k = j;
      while (letter(k)) ++k;
      return k;
    }
    if (number(j)) {
      size_t k = j;
      while (number(k)) ++k;
      return k;
    }
    if (other(j)) {
      size_t k = j;
      while (other(k)) ++k;
      return k;
    }
    if (space(i)) return whitespace(i, false);
    return i + 1;
  }

 private:
  std::vector<CodePoint> cps_;
};

}  // namespace

bool split_pattern_from_regex(const std::string& regex, SplitPattern* out) {
  if (regex == kLlama3Regex) {
    *out = SplitPattern::Llama3;
    return true;
  }
  if (regex == kGpt2Regex) {
    *out = SplitPattern::Gpt2;
    return true;
  }
  return false;
}

std::vector<std::string> pre_tokenize(const std::string& text, SplitPattern pattern) {
  std::vector<std::string> pieces;
  const Matcher m(text);
  size_t i = 0;
  while (i < m.size()) {
    const size_t end = pattern == SplitPattern::Llama3 ? m.llama3(i) : m.gpt2(i);
    pieces.push_back(text.substr(m.byte_begin(i), m.byte_begin(end) - m.byte_begin(i)));
    i = end;
  }
  return pieces;
}

}  // namespace tb::data
