// A string being normalized, with its alignments: every byte of the normalized text knows the byte range
// of the original text it came from, so tokens found in the normalized text get offsets into the original.
// The operations follow Hugging Face tokenizers' NormalizedString one for one (including how an edit
// decides a new character's alignment), because those choices are visible in the offsets it reports.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace tb::text {

// What Split does with the matched delimiters (tokenizer.json's "behavior").
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class NormalizedString {
 public:
  NormalizedString() = default;
  explicit NormalizedString(std::string original);  // normalized == original, each byte aligned to its character

  const std::string& get() const { return normalized_; }
  const std::string& original() const { return original_; }
  size_t size() const { return normalized_.size(); }
  bool empty() const { return normalized_.empty(); }
  // Where this string's original lies in the text it was cut from.
  ByteRange offsets_original() const { return {original_shift_, original_shift_ + original_.size()}; }
  const std::vector<ByteRange>& alignments() const { return alignments_; }

  // The original range (relative to original()) a normalized range came from; nullopt when out of range.
  std::optional<ByteRange> normalized_to_original(size_t start, size_t end) const;
  // The normalized range an original range became (tokenizers' convert_offsets from Original).
  std::optional<ByteRange> original_to_normalized(size_t start, size_t end) const;
  // The part of this string covering a normalized range; nullopt when it is not on character boundaries.
  std::optional<NormalizedString> slice(size_t start, size_t end) const;

  // Replaces normalized[start, end) by `dest`, the first `initial_offset` characters of the range removed
  // before it starts (tokenizers' transform_range).
  void transform_range(size_t start, size_t end, const std::vector<CharChange>& dest, size_t initial_offset);
  // transform_range over the normalized range the whole original maps to.
  void transform(const std::vector<CharChange>& dest, size_t initial_offset);

  void normalize(NormalForm form);
  void lowercase();
  void prepend(std::string_view s);
  // Every match of `pattern` becomes `content`; the new characters align to the last byte matched.
  void replace(const Pattern& pattern, std::string_view content);
  // Every occurrence of the character `c` becomes `content` (each a match of its own).
  void replace_char(char32_t c, std::string_view content);
  void strip(bool left, bool right);  // Unicode whitespace

  template <class Keep>
  void filter(Keep keep);
  template <class Map>
  void map(Map f);

  // Cut along `pieces` (consecutive, covering the text) as the behavior says; empty parts are kept here
  // (PreTokenizedString drops them).
  void split(const std::vector<PatternPiece>& pieces, SplitBehavior behavior, std::vector<NormalizedString>& out) const;

 private:
  void replace_pieces(const std::vector<PatternPiece>& pieces, std::string_view content);

  std::string original_;
  std::string normalized_;
  std::vector<ByteRange> alignments_;  // one per normalized byte: its original byte range
  size_t original_shift_ = 0;
};

// tokenizers' Pattern for a character predicate: each matching character is a match of its own.
template <class Pred>
void char_pieces(std::string_view text, Pred pred, std::vector<PatternPiece>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  size_t last_offset = 0;
  for (size_t b = 0; b < text.size();) {
    size_t len = 0;
    const char32_t c = decode_utf8(text.data() + b, &len);
    if (pred(c)) {
      if (last_offset < b) out.push_back({last_offset, b, false});
      out.push_back({b, b + len, true});
      last_offset = b + len;
    }
    b += len;
  }
  if (text.size() > last_offset) out.push_back({last_offset, text.size(), false});
}

template <class Keep>
void NormalizedString::filter(Keep keep) {
  std::vector<CharChange> changes;
  changes.reserve(normalized_.size());
  int removed = 0;
  size_t removed_start = 0;
  bool have_last = false;
  char32_t last = 0;
  for (size_t i = 0; i < normalized_.size();) {
    size_t len = 0;
    const char32_t c = decode_utf8(normalized_.data() + i, &len);
    i += len;
    if (keep(c)) {
      if (have_last) {
        changes.push_back({last, -removed});
      } else {
        removed_start = static_cast<size_t>(removed);
      }
      last = c;
      have_last = true;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (have_last) changes.push_back({last, -removed});
  transform(changes, removed_start);
}

template <class Map>
void NormalizedString::map(Map f) {
  std::vector<CharChange> changes;
  changes.reserve(normalized_.size());
  for (size_t i = 0; i < normalized_.size();) {
    size_t len = 0;
    const char32_t c = decode_utf8(normalized_.data() + i, &len);
    i += len;
    changes.push_back({f(c), 0});
  }
  transform(changes, 0);
}

}  // namespace tb::text
