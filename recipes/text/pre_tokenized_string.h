// A text on its way through the pipeline: the splits the added tokens and pre-tokenizers cut it into,
// each a NormalizedString (so each keeps its alignments to the original) and, once the model or an
// added token has spoken, its tokens (Hugging Face tokenizers' PreTokenizedString).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/normalized_string.h"

namespace tb::text {

// A token of one split: offsets are byte offsets into that split's normalized text.
struct Token {
  uint32_t id;
  std::string value;
  ByteRange offsets;
};

struct Split {
  NormalizedString normalized;
  std::optional<std::vector<Token>> tokens;  // set: an added token, or tokenized by the model
};

class PreTokenizedString {
 public:
  explicit PreTokenizedString(NormalizedString whole) : original_(whole.original()) {
    splits_.push_back({std::move(whole), std::nullopt});
  }

  const std::string& original() const { return original_; }
  std::vector<Split>& splits() { return splits_; }
  const std::vector<Split>& splits() const { return splits_; }

  // Replaces every split that has no tokens yet by what `f(index, split, out)` appends to `out` (a vector of
  // Split); empty results are dropped.
  template <class F>
  void split(F f) {
    std::vector<Split> next;
    next.reserve(splits_.size());
    std::vector<Split> produced;
    for (size_t i = 0; i < splits_.size(); ++i) {
      if (splits_[i].tokens) {
        next.push_back(std::move(splits_[i]));
        continue;
      }
      produced.clear();
      f(i, std::move(splits_[i].normalized), produced);
      for (auto& s : produced)
        if (!s.normalized.empty()) next.push_back(std::move(s));
    }
    splits_ = std::move(next);
  }

  // Applies `f(NormalizedString&)` to every split that has no tokens yet.
  template <class F>
  void normalize(F f) {
    for (auto& s : splits_)
      if (!s.tokens) f(s.normalized);
  }

 private:
  std::string original_;
  std::vector<Split> splits_;
};

// Convenience for split callbacks: NormalizedString::split's parts as untokenized splits.
inline void append_parts(std::vector<NormalizedString>& parts, std::vector<Split>& out) {
  for (auto& p : parts) out.push_back({std::move(p), std::nullopt});
}

}  // namespace tb::text
