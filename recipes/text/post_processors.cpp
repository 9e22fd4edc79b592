#include "text/post_processors.h"

#include <algorithm>
#include <stdexcept>

#include "text/byte_level.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace tb::text {

void ByteLevelProcessor::process(Encoding& e, bool) const {
  if (!trim_offsets_) return;
  const char32_t space = byte_to_char(' ');
  auto is_space = [space](char32_t c) { return c == space || is_white_space(c); };
  for (size_t i = 0; i < e.ids.size(); ++i) {
    const std::u32string chars = to_code_points(e.tokens[i]);
    // Counted in characters by tokenizers; our offsets are bytes, so each trimmed character counts its
    // UTF-8 length in the original (a byte-level space is one space).
    size_t leading = 0, leading_bytes = 0;
    while (leading < chars.size() && is_space(chars[leading])) {
      leading_bytes += chars[leading] == space ? 1 : utf8_length(chars[leading]);
      ++leading;
    }
    size_t trailing = 0, trailing_bytes = 0;
    while (trailing < chars.size() && is_space(chars[chars.size() - 1 - trailing])) {
      const char32_t c = chars[chars.size() - 1 - trailing];
      trailing_bytes += c == space ? 1 : utf8_length(c);
      ++trailing;
    }
    if (leading == 0 && trailing == 0) continue;
    auto& [start, end] = e.offsets[i];
    if (leading > 0) {
      const bool is_first = i == 0 || start == 0;
      if (is_first && add_prefix_space_ && leading == 1) leading_bytes = 0;
      start = std::min(start + leading_bytes, end);
    }
    if (trailing > 0 && end >= trailing_bytes) end = std::max(end - trailing_bytes, start);
  }
}

TemplateProcessor::TemplateProcessor(std::vector<Piece> single, std::map<std::string, SpecialToken> special_tokens)
    : single_(std::move(single)), special_tokens_(std::move(special_tokens)) {
  for (const auto& p : single_)
    if (!p.is_sequence && special_tokens_.find(p.special) == special_tokens_.end())
      throw std::invalid_argument("the template names '" + p.special + "', which is not in special_tokens");
}

void TemplateProcessor::process(Encoding& e, bool add_special_tokens) const {
  Encoding out;  // the template is applied either way: its $A pieces are the text
  const bool with_tokens = e.tokens.size() == e.ids.size();  // the fast path leaves token strings out
  for (const auto& p : single_) {
    if (p.is_sequence) {
      out.ids.insert(out.ids.end(), e.ids.begin(), e.ids.end());
      out.tokens.insert(out.tokens.end(), e.tokens.begin(), e.tokens.end());
      out.offsets.insert(out.offsets.end(), e.offsets.begin(), e.offsets.end());
      continue;
    }
    if (!add_special_tokens) continue;
    const SpecialToken& s = special_tokens_.at(p.special);
    out.ids.insert(out.ids.end(), s.ids.begin(), s.ids.end());
    if (with_tokens) out.tokens.insert(out.tokens.end(), s.tokens.begin(), s.tokens.end());
    out.offsets.insert(out.offsets.end(), s.ids.size(), ByteRange{0, 0});
  }
  e = std::move(out);
}

}  // namespace tb::text
