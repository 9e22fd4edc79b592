// libFuzzer target: a tiktoken BPE file (Llama 3's original tokenizer.model: a base64 token and its
// rank a line) through the loader, then a short text through the tokenizer it makes (encode and
// decode). Refusals are std::exception naming the file (and line); crashes, hangs and memory out of
// proportion to the file are findings.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "data/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const auto tokenizer = tb::data::BpeTokenizer::from_tiktoken(input, "tokenizer.model");
    const auto ids = tokenizer->encode("Hello world, héllo <|eot_id|> 123\n  x", true, true);
    (void)tokenizer->decode(ids);
  } catch (const std::exception&) {
  }
  return 0;
}
