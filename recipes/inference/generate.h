// `tunebench-cli generate`: text from a prompt with the KV cache, greedy or sampled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace tb::inference {

struct GenerateOptions {
  std::string prompt;
  // Wrap the prompt as the Alpaca instruction the instruct datasets train on ("### Instruction:
  // ... ### Response:"), so a model fine-tuned on alpaca_dataset answers it.
  bool instruct = false;
  std::string input;  // the Alpaca "### Input:" part (instruct only)
  // Send the prompt as a user message (after `system`, when given) through the tokenizer's conversation
  // formatting: the model's chat template with add_generation_prompt for tunebench.data.hf_tokenizer.
  bool chat = false;
  std::string system;
  int64_t max_new_tokens = 128;
  double temperature = 0;  // 0: greedy (deterministic); else softmax(logits / temperature) sampling
  int64_t top_k = 0;       // sample among the k most likely tokens; 0: all
  uint64_t seed = 0;
};

struct GenerateResult {
  std::string prompt_text;  // what the model was given (after the instruct wrapping)
  std::string text;         // the generated continuation only
  std::vector<int64_t> prompt_tokens, tokens;
  bool stopped_at_eos = false;
  double seconds = 0;  // generation only, without loading
  std::vector<std::string> warnings;  // the checkpointer's warnings, for the caller to show
};

// Called with the text decoded so far, after each new token (for streaming output).
using GenerateStream = std::function<void(const std::string& text_so_far)>;

// Throws std::runtime_error with a one-line reason.
GenerateResult generate(const config::Config& cfg, const GenerateOptions& options, const GenerateStream& stream = {});

}  // namespace tb::inference
