// An added token of tokenizer.json ("added_tokens"), with the flags that decide how it is found in text
// (text/added_vocabulary.h) and whether decode() skips it.
#pragma once

#include <cstdint>
#include <string>

namespace tb::text {

struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;       // the match takes the whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool normalized = true;    // found in the normalized text (by its normalized content), else in the raw text
  bool single_word = false;  // only where no word character touches it
};

}  // namespace tb::text
