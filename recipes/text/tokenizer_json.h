// Reading a Hugging Face tokenizer.json into a TokenizerPipeline. Everything the pipeline does not compute
// exactly as tokenizers does is refused when the file is read, naming the file, the JSON path of the field
// and its value: models other than BPE, BPE dropout, Unigram's Precompiled normalizer, pre-tokenizers,
// post-processors and decoders not listed in text/normalizers.h, text/pre_tokenizers.h,
// text/post_processors.h and text/decoders.h, truncation and padding.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "text/pipeline.h"

namespace tb::text {

// Thrown for files that are not valid tokenizer.json or hold what we do not compute; what() is
// "<source>: <json path> = <value>: <why>" (or "<source>: <why>" for the whole file).
class TokenizerFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::shared_ptr<TokenizerPipeline> load_tokenizer_json(const std::string& json_text, const std::string& source);

}  // namespace tb::text
