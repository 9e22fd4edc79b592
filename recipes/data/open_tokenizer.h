// A tokenizer from a path a user types: a Hugging Face model folder (tokenizer.json with its
// tokenizer_config.json, special_tokens_map.json, generation_config.json and chat template), a
// tokenizer.json, or a tokenizer.model (SentencePiece, else tiktoken); a folder without tokenizer.json is
// read through its tokenizer.model. For `tunebench-cli tokenize --tokenizer` and the window.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace tb::data {

// Throws std::runtime_error naming the path and what was tried.
std::shared_ptr<Tokenizer> open_tokenizer(const std::string& path);

// How each token of `ids` reads in the text, for previews: what decoding adds for it in the context of
// the tokens before it (SentencePiece's leading spaces and UTF-8 split over tokens come out right), or,
// for a token that decodes to nothing (BOS, <|im_start|>), its own text. Their concatenation is the text
// with the special tokens written out.
std::vector<std::string> token_pieces(const Tokenizer& tokenizer, const std::vector<int64_t>& ids);

}  // namespace tb::data
