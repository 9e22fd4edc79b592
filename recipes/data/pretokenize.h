// Pre-tokenizers of byte-level BPE: the split patterns, written as hand matchers (std::regex has
// no \p{L}). Each returns the pieces of `text` in order; their concatenation is `text`.
#pragma once

#include <string>
#include <vector>

namespace tb::data {

enum class SplitPattern {
  // Llama 3 / cl100k: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //                   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  // GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
};

// The pattern a tokenizer.json regex denotes; false when it is none we implement.
bool split_pattern_from_regex(const std::string& regex, SplitPattern* out);

std::vector<std::string> pre_tokenize(const std::string& text, SplitPattern pattern);

}  // namespace tb::data
