// Which of llama.cpp's pre-tokenizers (the tokenizer.ggml.pre name its loader reads) splits text as a
// byte-level tokenizer does. Chosen by what the tokenizer does, as llama.cpp's converter identifies a
// tokenizer by its output: a probe text is split by the tokenizer's own normalizer and pre-tokenizer, and
// by each name's split rules (llama.cpp's regular expressions, applied in turn, matches and the text
// between them kept); the first name whose pieces are the same is the one.
#pragma once

#include <optional>
#include <string>

#include "text/pipeline.h"

namespace tb::exporting {

// nullopt: llama.cpp has no name for this splitting (it would split text otherwise than training did).
std::optional<std::string> llama_cpp_pre_tokenizer(const text::TokenizerPipeline& pipeline);

// The names tried, in order, for a message: "llama-bpe (Llama 3), qwen2, ...".
std::string llama_cpp_pre_tokenizer_names();

}  // namespace tb::exporting
