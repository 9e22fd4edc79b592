#include "text/pre_tokenizers.h"

#include "text/byte_level.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace tb::text {
namespace {

// Splits every untokenized split of `s` along the pieces `find(text, pieces)` reports.
template <class Find>
void split_each(PreTokenizedString& s, SplitBehavior behavior, Find find) {
  std::vector<PatternPiece> pieces;
  std::vector<NormalizedString> parts;
  s.split([&](size_t, NormalizedString&& n, std::vector<Split>& out) {
    find(n.get(), pieces);
    parts.clear();
    n.split(pieces, behavior, parts);
    append_parts(parts, out);
  });
}

void flip_matches(std::vector<PatternPiece>& pieces) {
  for (auto& p : pieces) p.is_match = !p.is_match;
}

}  // namespace

void SplitPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  split_each(s, behavior_, [this](const std::string& text, std::vector<PatternPiece>& pieces) {
    pattern_.pieces(text, pieces);
    if (invert_) flip_matches(pieces);
  });
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
  if (use_regex_) gpt2_regex();
}

const Regex& ByteLevelPreTokenizer::gpt2_regex() {
  static const Regex re("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
  return re;
}

void ByteLevelPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  std::vector<PatternPiece> pieces;
  std::vector<NormalizedString> parts;
  s.split([&](size_t, NormalizedString&& n, std::vector<Split>& out) {
    if (add_prefix_space_ && (n.get().empty() || n.get()[0] != ' ')) n.prepend(" ");
    if (!use_regex_) {
      out.push_back({std::move(n), std::nullopt});
      return;
    }
    regex_pieces(gpt2_regex(), n.get(), pieces);
    parts.clear();
    n.split(pieces, SplitBehavior::Isolated, parts);
    append_parts(parts, out);
  });
  std::vector<CharChange> changes;
  s.normalize([&](NormalizedString& n) {
    byte_level_changes(n.get(), changes);
    n.transform(changes, 0);
  });
}

MetaspacePreTokenizer::MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
    : replacement_(replacement), scheme_(scheme), split_(split) {
  append_utf8(replacement_utf8_, replacement_);
}

void MetaspacePreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  std::vector<PatternPiece> pieces;
  std::vector<NormalizedString> parts;
  s.split([&](size_t, NormalizedString&& n, std::vector<Split>& out) {
    n.replace_char(U' ', replacement_utf8_);
    const bool starts_with_replacement = n.get().compare(0, replacement_utf8_.size(), replacement_utf8_) == 0;
    if (scheme_ == PrependScheme::Always && !starts_with_replacement) {
      n.prepend(replacement_utf8_);
    } else if (scheme_ == PrependScheme::First && !starts_with_replacement && n.offsets_original().first == 0) {
      n.prepend(replacement_utf8_);
    }
    if (!split_) {
      out.push_back({std::move(n), std::nullopt});
      return;
    }
    const char32_t r = replacement_;
    char_pieces(
        n.get(), [r](char32_t c) { return c == r; }, pieces);
    parts.clear();
    n.split(pieces, SplitBehavior::MergedWithNext, parts);
    append_parts(parts, out);
  });
}

void DigitsPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  split_each(s, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous,
             [](const std::string& text, std::vector<PatternPiece>& pieces) {
               char_pieces(
                   text, [](char32_t c) { return is_numeric(c); }, pieces);
             });
}

void WhitespacePreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  // tokenizers: the matches of \w+|[^\w\s]+ are kept, the rest removed.
  split_each(s, SplitBehavior::Removed, [](const std::string& text, std::vector<PatternPiece>& pieces) {
    pieces.clear();
    if (text.empty()) {
      pieces.push_back({0, 0, true});
      return;
    }
    enum Class { Word, Space, Other };
    auto class_of = [](char32_t c) { return is_word_char(c) ? Word : is_white_space(c) ? Space : Other; };
    size_t prev = 0;
    for (size_t i = 0; i < text.size();) {
      size_t len = 0;
      const Class k = class_of(decode_utf8(text.data() + i, &len));
      if (k == Space) {
        i += len;
        continue;
      }
      size_t j = i + len;
      while (j < text.size()) {
        size_t l = 0;
        if (class_of(decode_utf8(text.data() + j, &l)) != k) break;
        j += l;
      }
      if (prev != i) pieces.push_back({prev, i, true});  // between matches: removed
      pieces.push_back({i, j, false});
      prev = j;
      i = j;
    }
    if (prev != text.size()) pieces.push_back({prev, text.size(), true});
  });
}

void WhitespaceSplitPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  split_each(s, SplitBehavior::Removed, [](const std::string& text, std::vector<PatternPiece>& pieces) {
    char_pieces(
        text, [](char32_t c) { return is_white_space(c); }, pieces);
  });
}

void PunctuationPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  split_each(s, behavior_, [](const std::string& text, std::vector<PatternPiece>& pieces) {
    char_pieces(
        text, [](char32_t c) { return is_punctuation(c); }, pieces);
  });
}

void CharDelimiterPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  const char32_t d = delimiter_;
  split_each(s, SplitBehavior::Removed, [d](const std::string& text, std::vector<PatternPiece>& pieces) {
    char_pieces(
        text, [d](char32_t c) { return c == d; }, pieces);
  });
}

void BertPreTokenizer::pre_tokenize(PreTokenizedString& s) const {
  WhitespaceSplitPreTokenizer().pre_tokenize(s);
  PunctuationPreTokenizer(SplitBehavior::Isolated).pre_tokenize(s);
}

}  // namespace tb::text
