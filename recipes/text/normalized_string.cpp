#include "text/normalized_string.h"

#include <algorithm>

namespace tb::text {
namespace {

bool is_char_boundary(const std::string& s, size_t i) {
  if (i == 0 || i == s.size()) return true;
  if (i > s.size()) return false;
  return (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

}  // namespace

NormalizedString::NormalizedString(std::string original) : original_(std::move(original)) {
  normalized_ = original_;
  alignments_.reserve(original_.size());
  for (size_t i = 0; i < original_.size();) {
    const size_t len = utf8_sequence_length(static_cast<unsigned char>(original_[i]));
    const size_t end = std::min(i + len, original_.size());
    for (size_t k = i; k < end; ++k) alignments_.emplace_back(i, end);
    i = end;
  }
}

std::optional<ByteRange> NormalizedString::normalized_to_original(size_t start, size_t end) const {
  if (start == end) return ByteRange{start, end};
  if (start > end || end > alignments_.size()) return std::nullopt;
  return ByteRange{alignments_[start].first, alignments_[end - 1].second};
}

std::optional<ByteRange> NormalizedString::original_to_normalized(size_t start, size_t end) const {
  if (start == end) return ByteRange{start, end};
  if (start > end) return std::nullopt;
  bool have_start = false, have_end = false;
  size_t s = 0, e = 0;
  for (size_t i = 0; i < alignments_.size(); ++i) {
    const auto& a = alignments_[i];
    if (end < a.second) break;
    if (!have_start && start <= a.first && a.first != a.second) {
      s = i;
      have_start = true;
    }
    e = i + 1;
    have_end = true;
  }
  if (have_start && have_end) return ByteRange{s, e};
  if (have_start) return ByteRange{s, s};
  if (have_end) return ByteRange{e, e};
  return std::nullopt;
}

std::optional<NormalizedString> NormalizedString::slice(size_t start, size_t end) const {
  if (start > end || !is_char_boundary(normalized_, start) || !is_char_boundary(normalized_, end)) return std::nullopt;
  const auto original_range = normalized_to_original(start, end);
  if (!original_range) return std::nullopt;
  const auto [os, oe] = *original_range;
  NormalizedString out;
  if (os <= oe && is_char_boundary(original_, os) && is_char_boundary(original_, oe))
    out.original_ = original_.substr(os, oe - os);
  out.normalized_ = normalized_.substr(start, end - start);
  out.alignments_.reserve(end - start);
  for (size_t i = start; i < end; ++i)
    out.alignments_.emplace_back(alignments_[i].first - os, alignments_[i].second - os);
  out.original_shift_ = original_shift_ + os;
  return out;
}

void NormalizedString::transform_range(size_t start, size_t end, const std::vector<CharChange>& dest,
                                       size_t initial_offset) {
  // The characters being replaced, consumed as the changes say.
  const std::string_view replaced(normalized_.data() + start, end - start);
  size_t cursor = 0;  // byte position in `replaced`
  auto next_char_size = [&]() -> size_t {
    if (cursor >= replaced.size()) return 0;
    const size_t n = utf8_sequence_length(static_cast<unsigned char>(replaced[cursor]));
    cursor += n;
    return n;
  };
  size_t initial_removed = 0;
  for (size_t k = 0; k < initial_offset; ++k) initial_removed += next_char_size();

  size_t offset = initial_removed + start;
  std::vector<ByteRange> alignments;
  alignments.reserve(end - start);
  std::string text;
  text.reserve(end - start);
  const auto at = [&](size_t i) -> ByteRange {
    if (alignments_.empty()) return {0, 0};
    return alignments_[std::min(i, alignments_.size() - 1)];
  };
  for (const auto& [c, change] : dest) {
    const size_t idx = offset;
    const ByteRange align = change > 0 ? (idx < 1 ? ByteRange{0, 0} : at(idx - 1)) : at(idx);
    size_t replaced_size = 0;
    if (change <= 0) replaced_size = next_char_size();
    size_t removed = 0;
    for (int k = 0; k < -change; ++k) removed += next_char_size();
    offset += replaced_size + removed;
    const size_t before = text.size();
    append_utf8(text, c);
    alignments.insert(alignments.end(), text.size() - before, align);
  }
  alignments_.erase(alignments_.begin() + static_cast<std::ptrdiff_t>(start),
                    alignments_.begin() + static_cast<std::ptrdiff_t>(end));
  alignments_.insert(alignments_.begin() + static_cast<std::ptrdiff_t>(start), alignments.begin(), alignments.end());
  normalized_.replace(start, end - start, text);
}

void NormalizedString::transform(const std::vector<CharChange>& dest, size_t initial_offset) {
  const auto range = original_to_normalized(0, original_.size());
  if (!range) return;
  transform_range(range->first, range->second, dest, initial_offset);
}

void NormalizedString::normalize(NormalForm form) {
  std::vector<CharChange> changes;
  normalize_changes(form, normalized_, changes);
  transform(changes, 0);
}

void NormalizedString::lowercase() {
  std::vector<CharChange> changes;
  lowercase_changes(normalized_, changes);
  transform(changes, 0);
}

void NormalizedString::prepend(std::string_view s) {
  if (normalized_.empty()) return;
  size_t first_len = 0;
  const char32_t first = decode_utf8(normalized_.data(), &first_len);
  std::vector<CharChange> changes;
  bool head = true;
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    changes.push_back({decode_utf8(s.data() + i, &len), head ? 0 : 1});
    head = false;
    i += len;
  }
  changes.push_back({first, 1});
  transform_range(0, first_len, changes, 0);
}

void NormalizedString::replace_pieces(const std::vector<PatternPiece>& pieces, std::string_view content) {
  std::string text;
  text.reserve(normalized_.size());
  std::vector<ByteRange> alignments;
  alignments.reserve(alignments_.size());
  size_t last_end = 0;
  for (const auto& piece : pieces) {
    if (!piece.is_match) continue;
    text.append(normalized_, last_end, piece.start - last_end);
    alignments.insert(alignments.end(), alignments_.begin() + static_cast<std::ptrdiff_t>(last_end),
                      alignments_.begin() + static_cast<std::ptrdiff_t>(piece.start));
    // Every new character is an insertion after the removed match: it takes the alignment of the byte
    // before that point.
    const size_t idx = piece.end;
    const ByteRange align = idx < 1 ? ByteRange{0, 0} : alignments_[idx - 1];
    text.append(content);
    alignments.insert(alignments.end(), content.size(), align);
    last_end = piece.end;
  }
  text.append(normalized_, last_end, std::string::npos);
  alignments.insert(alignments.end(), alignments_.begin() + static_cast<std::ptrdiff_t>(last_end), alignments_.end());
  normalized_ = std::move(text);
  alignments_ = std::move(alignments);
}

void NormalizedString::replace(const Pattern& pattern, std::string_view content) {
  std::vector<PatternPiece> pieces;
  pattern.pieces(normalized_, pieces);
  replace_pieces(pieces, content);
}

void NormalizedString::replace_char(char32_t c, std::string_view content) {
  std::vector<PatternPiece> pieces;
  char_pieces(
      normalized_, [c](char32_t x) { return x == c; }, pieces);
  replace_pieces(pieces, content);
}

void NormalizedString::strip(bool left, bool right) {
  const std::u32string chars = to_code_points(normalized_);
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < chars.size() && is_white_space(chars[leading])) ++leading;
  if (right)
    while (trailing < chars.size() && is_white_space(chars[chars.size() - 1 - trailing])) ++trailing;
  if (leading == 0 && trailing == 0) return;
  const size_t count = chars.size();
  // tokenizers compares the character index with the byte length here; kept, as it decides the changes.
  const auto marked = static_cast<long long>(normalized_.size()) - static_cast<long long>(trailing) - 1;
  std::vector<CharChange> changes;
  for (size_t i = 0; i < count; ++i) {
    if (i < leading || i >= count - trailing) continue;
    changes.push_back({chars[i], static_cast<long long>(i) == marked ? -static_cast<int>(trailing) : 0});
  }
  transform(changes, leading);
}

void NormalizedString::split(const std::vector<PatternPiece>& pieces, SplitBehavior behavior,
                             std::vector<NormalizedString>& out) const {
  struct Part {
    size_t start, end;
    bool remove;
  };
  std::vector<Part> parts;
  parts.reserve(pieces.size());
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& p : pieces) parts.push_back({p.start, p.end, false});
      break;
    case SplitBehavior::Removed:
      for (const auto& p : pieces) parts.push_back({p.start, p.end, p.is_match});
      break;
    case SplitBehavior::Contiguous: {
      bool previous = false;
      for (const auto& p : pieces) {
        if (p.is_match == previous && !parts.empty()) {
          parts.back().end = p.end;
        } else {
          parts.push_back({p.start, p.end, false});
        }
        previous = p.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool previous = false;
      for (const auto& p : pieces) {
        if (p.is_match && !previous && !parts.empty()) {
          parts.back().end = p.end;
        } else {
          parts.push_back({p.start, p.end, false});
        }
        previous = p.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous = false;
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous && !parts.empty()) {
          parts.back().start = it->start;
        } else {
          parts.push_back({it->start, it->end, false});
        }
        previous = it->is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  for (const auto& part : parts) {
    if (part.remove) continue;
    auto piece = slice(part.start, part.end);
    if (piece) out.push_back(std::move(*piece));
  }
}

}  // namespace tb::text
