// libFuzzer target: a tokenizer.json through the loader, then a short text through the pipeline it
// makes (encode and decode). Refusals are TokenizerFileError; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const auto pipeline = tb::text::load_tokenizer_json(input, "fuzz.json");
    const auto encoding = pipeline->encode("Hello world, héllo <|im_end|> 123\n  x", true);
    (void)pipeline->decode(std::vector<int64_t>(encoding.ids.begin(), encoding.ids.end()), false);
  } catch (const tb::text::TokenizerFileError&) {
  }
  return 0;
}
