// The decoding loop `generate` and the window's chat share: a prompt's ids through the model with its
// KV cache, one token at a time, greedy or sampled, until a stop token, the length limit or the caller
// says stop.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <c10/core/ScalarType.h>

#include "data/tokenizer.h"
#include "models/transformer.h"

namespace tb::inference {

struct DecodeSettings {
  int64_t max_new_tokens = 128;
  double temperature = 0;  // 0: greedy (deterministic); else softmax(logits / temperature) sampling
  int64_t top_k = 0;       // sample among the k most likely tokens; 0: all
  uint64_t seed = 0;
};

struct Decoded {
  std::vector<int64_t> tokens;  // the new tokens, without the stop token
  bool stopped_at_eos = false;
  bool cancelled = false;       // the caller's callback said stop
  bool at_context_limit = false;  // stopped because the model reads no more (max_seq_len), not by choice
  double seconds = 0;
};

// Called with the new tokens so far after each one; false stops the loop (the reply keeps what it has).
using OnToken = std::function<bool(const std::vector<int64_t>& tokens)>;

// A conversation's ids as the model continues it: the turns through the tokenizer's conversation
// formatting (a model's chat template, with its generation prompt) and an open assistant turn. A prompt
// cut at tokenizer.max_seq_len would lose its end (the assistant's header): refused (runtime_error).
std::vector<int64_t> conversation_prompt(const data::Tokenizer& tokenizer, std::vector<data::Message> turns);

// Throws std::runtime_error when the prompt is empty or leaves no room under the model's max_seq_len;
// the new tokens are cut to what fits.
Decoded decode(models::TransformerDecoderImpl& model, const data::Tokenizer& tokenizer, c10::ScalarType dtype,
               const std::vector<int64_t>& prompt, const DecodeSettings& settings, const OnToken& on_token = {});

}  // namespace tb::inference
