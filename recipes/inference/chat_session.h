// A model loaded once and talked to turn by turn (the window's Chat tab): each reply renders the whole
// conversation through the tokenizer's conversation formatting (the model's own chat template for
// tunebench.data.hf_tokenizer) and streams its text as it decodes; the caller can stop it between tokens.
// Torch-free interface: the window includes it without LibTorch's headers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace tb::inference {

struct ChatTurn {
  std::string role;  // system, user, assistant
  std::string content;
};

// How the conversation becomes the prompt.
enum class ChatFormat {
  Template,  // every turn through the tokenizer's conversation formatting (the model's chat template)
  Alpaca,    // the last user turn as the Alpaca instruction alpaca_dataset trains on (one turn, no history)
  Plain,     // the last user turn as raw text after BOS, continued (one turn, no history)
};

struct ChatSettings {
  ChatFormat format = ChatFormat::Template;
  int64_t max_new_tokens = 256;
  double temperature = 0.7;  // 0: greedy
  int64_t top_k = 40;        // 0: all
  uint64_t seed = 0;
};

struct ChatReply {
  std::string text;
  std::vector<int64_t> prompt_tokens, tokens;
  bool stopped_at_eos = false;
  bool cancelled = false;
  double seconds = 0;  // decoding only
};

// Called with the reply decoded so far after each token; false stops the reply there.
using ChatStream = std::function<bool(const std::string& text_so_far)>;

class ChatSession {
 public:
  // Builds the config's model and tokenizer and loads its weights (as `generate` does). Throws
  // std::runtime_error with a one-line reason.
  explicit ChatSession(const config::Config& config);
  ~ChatSession();
  ChatSession(const ChatSession&) = delete;
  ChatSession& operator=(const ChatSession&) = delete;

  const std::string& weights() const;  // one line: where the weights came from
  const std::vector<std::string>& warnings() const;
  int64_t max_seq_len() const;

  // The next assistant turn after `conversation` (its last turn is normally the user's). Throws
  // std::runtime_error when the conversation does not fit the model.
  ChatReply reply(const std::vector<ChatTurn>& conversation, const ChatSettings& settings,
                  const ChatStream& stream = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tb::inference
