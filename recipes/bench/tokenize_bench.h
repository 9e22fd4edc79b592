// `bench tokenize`: how fast a tokenizer.json encodes a text file (MB/s), the text encoded whole, as Hugging
// Face tokenizers' encode(text, add_special_tokens=False) would be asked to (scripts/bench_tokenizer.sh
// times that reference on the same text).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tb::bench {

struct TokenizeBenchOptions {
  std::string tokenizer_path;  // tokenizer.json (or a tiktoken file)
  std::string text_path;
  int threads = 1;  // >1: the text cut at line ends into that many parts, encoded at once
  int runs = 5;     // timed runs after one warm-up run; the median is reported
};

// {"bench": "tokenize", "bytes", "tokens", "threads", "runs", "median_s", "mb_per_s" (10^6 bytes),
//  "tokens_per_s", "load_s", "fast_path"}. Throws std::runtime_error for files that cannot be read.
nlohmann::json bench_tokenize(const TokenizeBenchOptions& options);

}  // namespace tb::bench
