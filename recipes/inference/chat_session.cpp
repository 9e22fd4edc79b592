#include "inference/chat_session.h"

#include <algorithm>

#include "data/sft_datasets.h"
#include "inference/decode.h"
#include "inference/loaded_model.h"

namespace tb::inference {

namespace {

std::vector<int64_t> prompt_of(const data::Tokenizer& tokenizer, const std::vector<ChatTurn>& conversation,
                               ChatFormat format) {
  if (format == ChatFormat::Template) {
    std::vector<data::Message> turns;
    for (const ChatTurn& t : conversation) turns.emplace_back(t.role, t.content, t.role != "assistant");
    return conversation_prompt(tokenizer, turns);
  }
  const auto last_user = std::find_if(conversation.rbegin(), conversation.rend(),
                                      [](const ChatTurn& t) { return t.role == "user"; });
  if (last_user == conversation.rend()) throw std::runtime_error("the conversation has no user turn");
  if (format == ChatFormat::Plain) return tokenizer.encode(last_user->content, /*add_bos=*/true, /*add_eos=*/false);
  return conversation_prompt(tokenizer, {data::Message("user", data::alpaca_prompt(last_user->content, ""), true)});
}

}  // namespace

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
  ChatReply out;
  out.prompt_tokens = prompt_of(tokenizer, conversation, settings.format);
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
