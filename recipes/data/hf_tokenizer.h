// A Hugging Face model folder's tokenizer as transformers loads it: tokenizer.json (BpeTokenizer runs
// it), the special tokens of tokenizer_config.json overridden by special_tokens_map.json, the stop
// tokens of generation_config.json, and the model's chat template (data/chat_template.h), which formats
// conversations and decides the loss mask.
//
// The loss mask with a template: a token is trained when its first byte lies in a trained range of the
// rendered text. A message that is not masked (mask_messages decides: the assistant's turns, and the
// user's with train_on_input) trains what the template wrote for it, except, for an assistant, the
// header a generation prompt supplies ("<|im_start|>assistant\n"): from its content through the first
// stop token after it (<|im_end|>, <end_of_turn>, <|eot_id|>: the model must learn to stop), nothing
// after that. Text the template writes outside the messages (a BOS, a default system prompt, a system
// prompt folded into a user turn) is masked like the prompt.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/bpe_tokenizer.h"
#include "data/chat_template.h"
#include "data/tokenizer.h"

namespace tb::data {

struct HfTokenizerOptions {
  std::optional<int64_t> max_seq_len;
  std::string truncation_type = "right";
  std::optional<PromptTemplate> prompt_template;  // torchtune's tags around each role's text, applied first
  // "auto": the model's own template when the folder has one; "none": torchtune's formatting
  // (BpeTokenizer::tokenize_messages); anything else: a .jinja file to use.
  std::string chat_template = "auto";
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // e.g. {"enable_thinking": false}
  bool parse_special_tokens = true;
  std::string bos_token, eos_token, pad_token;  // override the folder's
};

// A conversation rendered by the template and tokenized, with per token whether it is masked.
struct TemplateEncoding {
  std::string text;
  std::vector<int64_t> tokens;
  std::vector<bool> mask;                          // true: masked out of the loss
  std::vector<std::pair<size_t, size_t>> offsets;  // byte range of each token in `text`
  std::vector<MessageSpan> spans;                  // where each message landed
  bool truncated = false;
};

class HfTokenizer : public Tokenizer {
 public:
  // `path`: a model folder, or a tokenizer.json (its folder is read for the rest). Throws std::runtime_error
  // naming the file and the problem.
  static std::shared_ptr<HfTokenizer> from_path(const std::string& path, const HfTokenizerOptions& options = {});

  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override;
  std::string decode(const std::vector<int64_t>& ids) const override { return bpe_->decode(ids); }
  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t vocab_size() const override { return bpe_->vocab_size(); }
  std::string id_to_token(int64_t id) const override { return bpe_->id_to_token(id); }
  std::vector<int64_t> stop_tokens() const override { return stop_ids_; }
  // Through the chat template when there is one (add_end_tokens=false: a trailing empty assistant message
  // becomes the template's generation prompt), else BpeTokenizer's formatting.
  TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const override;

  const ChatTemplate* chat_template() const { return template_ ? &*template_ : nullptr; }
  // Requires chat_template(). `tools`: null or a list of tool definitions. Truncated to max_seq_len.
  TemplateEncoding encode_conversation(const std::vector<Message>& messages, bool add_generation_prompt,
                                       const nlohmann::ordered_json& tools = nullptr) const;
  const BpeTokenizer& bpe() const { return *bpe_; }

 private:
  HfTokenizer() = default;
  std::vector<Message> templated(const std::vector<Message>& messages) const;

  std::shared_ptr<BpeTokenizer> bpe_;
  std::optional<ChatTemplate> template_;
  std::optional<PromptTemplate> prompt_template_;
  int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = 0;
  std::vector<int64_t> stop_ids_;
};

// The special tokens of a model folder as transformers reads them: tokenizer_config.json's bos_token,
// eos_token, pad_token, unk_token (a string or {"content": ...}), overridden by special_tokens_map.json;
// and generation_config.json's eos_token_id (one id or a list). Missing files and keys stay empty.
struct FolderSpecialTokens {
  std::string bos, eos, pad, unk;
  std::vector<std::string> additional;  // additional_special_tokens
  std::vector<int64_t> generation_eos_ids;
};
FolderSpecialTokens read_folder_special_tokens(const std::string& dir);

}  // namespace tb::data
