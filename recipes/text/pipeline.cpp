#include "text/pipeline.h"

#include <algorithm>
#include <deque>

#include "text/utf8.h"

namespace tb::text {
namespace {

bool is_byte_level_pre_tokenizer(const PreTokenizer* p) {
  if (!p) return false;
  if (p->kind() == PreTokenizer::Kind::ByteLevel) return true;
  if (p->kind() == PreTokenizer::Kind::Sequence)
    for (const auto& step : static_cast<const SequencePreTokenizer*>(p)->steps())
      if (is_byte_level_pre_tokenizer(step.get())) return true;
  return false;
}

bool is_byte_level_decoder(const Decoder* d) { return dynamic_cast<const ByteLevelDecoder*>(d) != nullptr; }

// Start of the character holding byte i / end of the character holding byte i (valid UTF-8).
size_t char_start(std::string_view s, size_t i) {
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}
size_t char_end(std::string_view s, size_t i) {
  ++i;
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  return i;
}

void map_offsets(const std::vector<size_t>& original_offset, Encoding& e) {
  for (auto& [s, t] : e.offsets) {
    s = original_offset[std::min(s, original_offset.size() - 1)];
    t = original_offset[std::min(t, original_offset.size() - 1)];
  }
}

}  // namespace

TokenizerPipeline::TokenizerPipeline(std::shared_ptr<const Normalizer> normalizer,
                                     std::shared_ptr<const PreTokenizer> pre_tokenizer, BpeModel model,
                                     std::shared_ptr<const PostProcessor> post_processor,
                                     std::shared_ptr<const Decoder> decoder)
    : normalizer_(std::move(normalizer)),
      pre_tokenizer_(std::move(pre_tokenizer)),
      model_(std::move(model)),
      post_processor_(std::move(post_processor)),
      decoder_(std::move(decoder)) {
  byte_level_ = is_byte_level_pre_tokenizer(pre_tokenizer_.get()) || is_byte_level_decoder(decoder_.get());
  prepare();
}

void TokenizerPipeline::prepare() {
  fast_ = false;
  splitters_.clear();
  if (!model_.byte_level() && !model_.enable_byte_level()) return;
  if (added_.has_normalized_tokens()) return;
  if (post_processor_ && post_processor_->changes_offsets()) return;
  fast_nfc_ = false;
  if (normalizer_) {
    const auto* u = dynamic_cast<const UnicodeNormalizer*>(normalizer_.get());
    if (!u || u->form() != NormalForm::NFC) return;
    fast_nfc_ = true;
  }
  // Splitting steps, then one ByteLevel without a prefix space (last).
  std::vector<const PreTokenizer*> steps;
  if (!pre_tokenizer_) return;
  if (pre_tokenizer_->kind() == PreTokenizer::Kind::Sequence) {
    for (const auto& s : static_cast<const SequencePreTokenizer*>(pre_tokenizer_.get())->steps())
      steps.push_back(s.get());
  } else {
    steps.push_back(pre_tokenizer_.get());
  }
  if (steps.empty() || steps.back()->kind() != PreTokenizer::Kind::ByteLevel) return;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PreTokenizer* p = steps[i];
    Splitter s;
    switch (p->kind()) {
      case PreTokenizer::Kind::Split: {
        const auto* split = static_cast<const SplitPreTokenizer*>(p);
        s.pattern = &split->pattern();
        s.behavior = split->behavior();
        s.invert = split->invert();
        break;
      }
      case PreTokenizer::Kind::ByteLevel: {
        const auto* b = static_cast<const ByteLevelPreTokenizer*>(p);
        if (b->add_prefix_space() || i + 1 != steps.size()) return;
        if (!b->use_regex()) continue;
        s.regex = &ByteLevelPreTokenizer::gpt2_regex();
        break;
      }
      case PreTokenizer::Kind::Digits: {
        s.digits = true;
        s.behavior = static_cast<const DigitsPreTokenizer*>(p)->individual() ? SplitBehavior::Isolated
                                                                             : SplitBehavior::Contiguous;
        break;
      }
      default:
        return;
    }
    splitters_.push_back(s);
  }
  fast_ = true;
}

void TokenizerPipeline::split_ranges(std::string_view text, const Splitter& s, std::vector<ByteRange>& ranges) const {
  thread_local std::vector<ByteRange> next;
  thread_local std::vector<PatternPiece> pieces;
  next.clear();
  for (const auto& [start, end] : ranges) {
    const std::string_view part = text.substr(start, end - start);
    if (s.regex) {
      regex_pieces(*s.regex, part, pieces);
    } else if (s.digits) {
      char_pieces(
          part, [](char32_t c) { return is_numeric(c); }, pieces);
    } else {
      s.pattern->pieces(part, pieces);
    }
    if (s.invert)
      for (auto& p : pieces) p.is_match = !p.is_match;
    // NormalizedString::split's grouping, on plain ranges.
    const size_t first = next.size();
    bool previous = false;
    switch (s.behavior) {
      case SplitBehavior::Isolated:
        for (const auto& p : pieces) next.emplace_back(p.start, p.end);
        break;
      case SplitBehavior::Removed:
        for (const auto& p : pieces)
          if (!p.is_match) next.emplace_back(p.start, p.end);
        break;
      case SplitBehavior::Contiguous:
        for (const auto& p : pieces) {
          if (p.is_match == previous && next.size() > first) {
            next.back().second = p.end;
          } else {
            next.emplace_back(p.start, p.end);
          }
          previous = p.is_match;
        }
        break;
      case SplitBehavior::MergedWithPrevious:
        for (const auto& p : pieces) {
          if (p.is_match && !previous && next.size() > first) {
            next.back().second = p.end;
          } else {
            next.emplace_back(p.start, p.end);
          }
          previous = p.is_match;
        }
        break;
      case SplitBehavior::MergedWithNext: {
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
          if (it->is_match && !previous && next.size() > first) {
            next.back().first = it->start;
          } else {
            next.emplace_back(it->start, it->end);
          }
          previous = it->is_match;
        }
        std::reverse(next.begin() + static_cast<std::ptrdiff_t>(first), next.end());
        break;
      }
    }
    // Back to offsets in `text`; empty parts are dropped as PreTokenizedString drops them.
    size_t keep = first;
    for (size_t i = first; i < next.size(); ++i) {
      if (next[i].first == next[i].second) continue;
      next[keep++] = {start + next[i].first, start + next[i].second};
    }
    next.resize(keep);
  }
  ranges.swap(next);
}

namespace {

// A segment's NFC form for the fast path: the stretches NFC leaves alone are taken as they are, the others
// (cut before characters nfc_quick() accepts, where NFC starts afresh) are normalized with alignments.
class NfcText {
 public:
  void build(std::string_view segment) {
    segment_ = segment;
    text_.clear();
    regions_.clear();
    patches_.clear();
    size_t i = 0;
    while (i < segment.size()) {
      // The next character NFC may change, and the quick character before it (which it may join).
      size_t p = i, prev = i;
      bool found = false;
      while (p < segment.size()) {
        size_t len = 0;
        const char32_t c = static_cast<unsigned char>(segment[p]) < 0x80 ? segment[p] : decode_utf8(segment.data() + p, &len);
        if (len == 0) len = 1;
        if (!nfc_quick(c)) {
          found = true;
          break;
        }
        prev = p;
        p += len;
      }
      if (!found) {
        add_identity(i, segment.size());
        break;
      }
      const size_t q = p > i ? prev : p;
      if (q > i) add_identity(i, q);
      size_t r = p;
      while (r < segment.size()) {
        size_t len = 0;
        const char32_t c = decode_utf8(segment.data() + r, &len);
        if (nfc_quick(c)) break;
        r += len;
      }
      patches_.emplace_back(std::string(segment.substr(q, r - q)));
      patches_.back().normalize(NormalForm::NFC);
      regions_.push_back({text_.size(), q, patches_.size()});
      text_ += patches_.back().get();
      i = r;
    }
  }

  const std::string& text() const { return text_; }

  // The original range (bytes of the segment) of normalized bytes [first, last].
  ByteRange original(size_t first, size_t last) const {
    return {locate(first).first, locate(last).second};
  }

 private:
  struct Region {
    size_t normalized_start, original_start;
    size_t patch;  // 0: taken as it is; else 1 + index in patches_
  };
  void add_identity(size_t from, size_t to) {
    regions_.push_back({text_.size(), from, 0});
    text_.append(segment_.data() + from, to - from);
  }
  // The original range of the character holding normalized byte x.
  ByteRange locate(size_t x) const {
    auto it = std::upper_bound(regions_.begin(), regions_.end(), x,
                               [](size_t v, const Region& r) { return v < r.normalized_start; });
    const Region& r = *(it - 1);
    if (r.patch == 0) {
      const size_t at = r.original_start + (x - r.normalized_start);
      return {char_start(segment_, at), char_end(segment_, at)};
    }
    const auto& a = patches_[r.patch - 1].alignments()[x - r.normalized_start];
    return {r.original_start + a.first, r.original_start + a.second};
  }

  std::string_view segment_;
  std::string text_;
  std::vector<Region> regions_;
  std::deque<NormalizedString> patches_;
};

}  // namespace

bool TokenizerPipeline::encode_fast(std::string_view text, bool add_special_tokens, Encoding& out) const {
  thread_local std::vector<AddedVocabulary::Piece> pieces;
  thread_local std::vector<ByteRange> ranges;
  thread_local std::vector<IdSpan> spans;
  thread_local NfcText nfc;
  added_.split_raw(text, pieces);
  for (const auto& piece : pieces) {
    if (piece.start == piece.end) continue;
    if (piece.id >= 0) {
      out.ids.push_back(static_cast<uint32_t>(piece.id));
      out.offsets.emplace_back(piece.start, piece.end);
      continue;
    }
    const std::string_view segment = text.substr(piece.start, piece.end - piece.start);
    // Text NFC leaves alone is split and tokenized as it is; otherwise its NFC form is, and the tokens map
    // back through its alignments.
    const bool normalized = fast_nfc_ && !nfc_quick_check(segment);
    if (normalized) nfc.build(segment);
    const std::string_view work = normalized ? std::string_view(nfc.text()) : segment;
    ranges.clear();
    ranges.emplace_back(0, work.size());
    for (const auto& s : splitters_) split_ranges(work, s, ranges);
    for (const auto& [start, end] : ranges) {
      spans.clear();
      model_.tokenize_bytes(work.substr(start, end - start), spans);
      size_t pos = start;
      for (const IdSpan& sp : spans) {
        out.ids.push_back(sp.id);
        const size_t last = pos + sp.length - 1;
        if (normalized) {
          const auto [s, e] = nfc.original(pos, last);
          out.offsets.emplace_back(piece.start + s, piece.start + e);
        } else {
          out.offsets.emplace_back(piece.start + char_start(segment, pos), piece.start + char_end(segment, last));
        }
        pos += sp.length;
      }
    }
  }
  if (post_processor_) post_processor_->process(out, add_special_tokens);
  return true;
}

Encoding TokenizerPipeline::encode(std::string_view text, bool add_special_tokens) const {
  if (!fast_) return encode_general(text, add_special_tokens);
  Encoding out;
  if (is_valid_utf8(text)) {
    if (encode_fast(text, add_special_tokens, out)) return out;
    return encode_general(text, add_special_tokens);
  }
  std::vector<size_t> original_offset;
  const std::string valid = lossy_utf8(text, &original_offset);
  if (!encode_fast(valid, add_special_tokens, out)) {
    out = encode_general(valid, add_special_tokens);
  }
  map_offsets(original_offset, out);
  return out;
}

Encoding TokenizerPipeline::encode_general(std::string_view text, bool add_special_tokens) const {
  std::vector<size_t> original_offset;
  const bool valid = is_valid_utf8(text);
  const std::string owned = valid ? std::string(text) : lossy_utf8(text, &original_offset);
  PreTokenizedString pre = added_.extract_and_normalize(normalizer_.get(), owned);
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pre);
  Encoding e;
  for (auto& split : pre.splits()) {
    if (!split.tokens) {
      split.tokens.emplace();
      model_.tokenize(split.normalized.get(), *split.tokens);
    }
    const size_t shift = split.normalized.offsets_original().first;
    for (auto& token : *split.tokens) {
      const auto range = split.normalized.normalized_to_original(token.offsets.first, token.offsets.second);
      e.ids.push_back(token.id);
      e.tokens.push_back(std::move(token.value));
      e.offsets.push_back(range ? ByteRange{shift + range->first, shift + range->second} : token.offsets);
    }
  }
  if (post_processor_) post_processor_->process(e, add_special_tokens);
  if (!valid) map_offsets(original_offset, e);
  return e;
}

std::optional<std::string> TokenizerPipeline::id_to_token(int64_t id) const {
  if (id < 0 || id > UINT32_MAX) return std::nullopt;
  if (const std::string* s = added_.decoded_content(static_cast<uint32_t>(id))) return *s;
  if (const std::string* s = model_.id_to_token(static_cast<uint32_t>(id))) return *s;
  return std::nullopt;
}

std::optional<uint32_t> TokenizerPipeline::token_to_id(const std::string& token) const {
  if (const auto id = added_.token_to_id(token)) return id;
  return model_.token_to_id(token);
}

std::string TokenizerPipeline::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int64_t id : ids) {
    auto token = id_to_token(id);
    if (!token) continue;
    if (skip_special_tokens && added_.is_special_content(*token)) continue;
    tokens.push_back(std::move(*token));
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ' ';
    out += tokens[i];
  }
  return out;
}

}  // namespace tb::text
