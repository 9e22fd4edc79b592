#include "inference/chat_session.h"

#include "inference/decode.h"
#include "inference/loaded_model.h"

namespace tb::inference {

struct ChatSession::Impl {
  LoadedModel loaded;
};

ChatSession::ChatSession(const config::Config& config) : impl_(std::make_unique<Impl>()) {
  impl_->loaded = load_model(config);
}

ChatSession::~ChatSession() = default;

const std::string& ChatSession::weights() const { return impl_->loaded.weights; }
const std::vector<std::string>& ChatSession::warnings() const { return impl_->loaded.warnings; }
int64_t ChatSession::max_seq_len() const { return impl_->loaded.model->args().max_seq_len; }

ChatReply ChatSession::reply(const std::vector<ChatTurn>& conversation, const ChatSettings& settings,
                             const ChatStream& stream) {
  const data::Tokenizer& tokenizer = *impl_->loaded.tokenizer;
  std::vector<data::Message> turns;
  for (const ChatTurn& t : conversation) turns.emplace_back(t.role, t.content, t.role != "assistant");
  ChatReply out;
  out.prompt_tokens = conversation_prompt(tokenizer, turns);
  const DecodeSettings decode_settings{settings.max_new_tokens, settings.temperature, settings.top_k, settings.seed};
  const Decoded decoded = decode(*impl_->loaded.model, tokenizer, impl_->loaded.dtype, out.prompt_tokens, decode_settings,
                                 [&](const std::vector<int64_t>& tokens) {
                                   return !stream || stream(tokenizer.decode(tokens));
                                 });
  out.tokens = decoded.tokens;
  out.text = tokenizer.decode(out.tokens);
  out.stopped_at_eos = decoded.stopped_at_eos;
  out.cancelled = decoded.cancelled;
  out.seconds = decoded.seconds;
  return out;
}

}  // namespace tb::inference
