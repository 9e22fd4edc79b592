#include "text/normalizers.h"

#include "text/byte_level.h"

namespace tb::text {

void StripNormalizer::normalize(NormalizedString& s) const {
  if (left_ && right_) {
    s.strip(true, true);
    return;
  }
  if (left_) s.strip(true, false);
  if (right_) s.strip(false, true);
}

void StripAccentsNormalizer::normalize(NormalizedString& s) const {
  s.filter([](char32_t c) { return !is_mark(c); });
}

void NmtNormalizer::normalize(NormalizedString& s) const {
  s.filter([](char32_t c) {
    return !((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F);
  });
  s.map([](char32_t c) -> char32_t {
    switch (c) {
      case 0x09:
      case 0x0A:
      case 0x0C:
      case 0x0D:
      case 0x1680:
      case 0x2028:
      case 0x2029:
      case 0x2581:
      case 0xFEFF:
      case 0xFFFD:
        return U' ';
      default:
        return (c >= 0x200B && c <= 0x200F) ? U' ' : c;
    }
  });
}

void ByteLevelNormalizer::normalize(NormalizedString& s) const {
  if (s.empty()) return;
  std::vector<CharChange> changes;
  byte_level_changes(s.get(), changes);
  s.transform(changes, 0);
}

namespace {

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace

void BertNormalizer::normalize(NormalizedString& s) const {
  if (clean_text_) {
    s.filter([](char32_t c) {
      const bool control = !(c == '\t' || c == '\n' || c == '\r') && is_other(c);
      return !(c == 0 || c == 0xFFFD || control);
    });
    s.map([](char32_t c) -> char32_t {
      const bool white = c == '\t' || c == '\n' || c == '\r' || is_white_space(c);
      return white ? U' ' : c;
    });
  }
  if (handle_chinese_chars_) {
    std::vector<CharChange> changes;
    const std::string& text = s.get();
    for (size_t i = 0; i < text.size();) {
      size_t len = 0;
      const char32_t c = decode_utf8(text.data() + i, &len);
      i += len;
      if (is_chinese_char(c)) {
        changes.push_back({U' ', 0});
        changes.push_back({c, 1});
        changes.push_back({U' ', 1});
      } else {
        changes.push_back({c, 0});
      }
    }
    s.transform(changes, 0);
  }
  if (strip_accents_) {
    s.normalize(NormalForm::NFD);
    s.filter([](char32_t c) { return !is_mark_nonspacing(c); });
  }
  if (lowercase_) s.lowercase();
}

}  // namespace tb::text
