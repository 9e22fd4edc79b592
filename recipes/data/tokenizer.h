// Tokenizers as torchtune's model tokenizers see them: text <-> ids with BOS/EOS flags, and
// tokenize_messages() turning a conversation into tokens plus a loss mask.
//
// Implementations: SentencePieceTokenizer (data/sentencepiece_tokenizer.h: Llama 2, Mistral) and
// BpeTokenizer (data/bpe_tokenizer.h: Hugging Face tokenizer.json / tiktoken files, Llama 3).
// Components (registry kind "tokenizer") build a std::shared_ptr<tb::data::Tokenizer>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::data {

// The most a tokenizer's JSON file may hold (Gemma 3's tokenizer.json, among the largest, is 33 MB): a
// larger file, a device or a FIFO is refused before it is read whole.
constexpr uint64_t kMaxTokenizerJsonBytes = uint64_t(512) << 20;

// One turn of a conversation, as torchtune's Message. `content` holds text parts that are encoded
// one by one (prompt templates add their tags as extra parts, which changes SentencePiece's
// whitespace handling exactly as in torchtune).
struct Message {
  std::string role;                  // system, user, assistant, ipython
  std::vector<std::string> content;  // text parts
  bool masked = false;               // excluded from the loss
  bool eot = true;                   // ends the turn (Llama 3: <|eot_id|>, else <|eom_id|>)
  bool ipython = false;              // a tool call (Llama 3: prefixed with <|python_tag|>)
  // The message's other fields as the data gave them (tool_calls, reasoning_content, name,
  // tool_call_id, ...): a model's chat template may render them.
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();

  Message() = default;
  Message(std::string role_, std::string text, bool masked_ = false)
      : role(std::move(role_)), content{std::move(text)}, masked(masked_) {}
  std::string text() const;  // the parts joined
};

// Tokens and, per token, whether it is masked out of the loss.
struct TokenizedMessages {
  std::vector<int64_t> tokens;
  std::vector<bool> mask;
  bool truncated = false;  // cut at max_seq_len
};

// Tags placed around each role's text (torchtune's PromptTemplate and the model chat templates).
class PromptTemplate {
 public:
  enum class Kind { Custom, Llama2Chat, MistralChat, ChatML };

  PromptTemplate() = default;  // Custom with no tags: leaves messages as they are
  static PromptTemplate custom(std::map<std::string, std::pair<std::string, std::string>> tags);
  static PromptTemplate llama2_chat();   // [INST] ... [/INST], <<SYS>> folded into user turns
  static PromptTemplate mistral_chat();  // [INST] ... [/INST]; a system message is an error
  // <|im_start|>role\n ... <|im_end|>\n as text; a trailing empty assistant message gets only its
  // opening tag (the model continues from it).
  static PromptTemplate chatml();
  // By torchtune's dotted name or short name: Llama2ChatTemplate, MistralChatTemplate, ChatMLTemplate,
  // GrammarErrorCorrectionTemplate, SummarizeTemplate, QuestionAnswerTemplate. Throws
  // std::invalid_argument naming the accepted values.
  static PromptTemplate from_name(const std::string& name);

  std::vector<Message> apply(const std::vector<Message>& messages) const;
  Kind kind() const { return kind_; }

 private:
  Kind kind_ = Kind::Custom;
  std::map<std::string, std::pair<std::string, std::string>> tags_;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Ids of `text`, with BOS first / EOS last as asked (torchtune's encode(text, add_bos, add_eos)).
  virtual std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const = 0;
  // Text of `ids`; BOS/EOS/special tokens decode to nothing.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;

  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  virtual int64_t pad_id() const = 0;  // used for padded inputs (labels are padded with -100)
  virtual int64_t vocab_size() const = 0;
  // How one token reads, for previews: the SentencePiece piece ("\u2581the", "<0x0A>", "<s>") or the BPE
  // token's bytes / added token's text. Throws std::out_of_range outside the vocabulary.
  virtual std::string id_to_token(int64_t id) const = 0;
  // Tokens that end generation (EOS, and for Llama 3 also <|eot_id|>, <|eom_id|>).
  virtual std::vector<int64_t> stop_tokens() const { return {eos_id()}; }

  // A conversation as tokens and loss mask, truncated to max_seq_len() (the last token then becomes
  // EOS when add_end_tokens). add_end_tokens=false is for generation prompts.
  virtual TokenizedMessages tokenize_messages(const std::vector<Message>& messages,
                                              bool add_end_tokens = true) const = 0;

  // The truncation length of tokenize_messages and of the datasets built on this tokenizer.
  std::optional<int64_t> max_seq_len() const { return max_seq_len_; }
  void set_max_seq_len(std::optional<int64_t> n) { max_seq_len_ = n; }
  // "left" keeps the last max_seq_len tokens, "right" (default) the first.
  const std::string& truncation_type() const { return truncation_type_; }
  void set_truncation_type(const std::string& type);  // throws std::invalid_argument on other values

 private:
  std::optional<int64_t> max_seq_len_;
  std::string truncation_type_ = "right";
};

// torchtune's truncate(): keep max_len items from the right or left end; when `last` is given and
// the kept last item differs from it, the last item is replaced by it.
template <class T>
std::vector<T> truncate(const std::vector<T>& items, int64_t max_len, std::optional<T> last = std::nullopt,
                        const std::string& truncation_type = "right") {
  std::vector<T> out;
  const auto n = static_cast<int64_t>(items.size());
  const int64_t keep = std::max<int64_t>(0, std::min(n, max_len));
  if (truncation_type == "left") {
    out.assign(items.end() - keep, items.end());
  } else {
    out.assign(items.begin(), items.begin() + keep);
  }
  if (last && !out.empty() && out.back() != *last) out.back() = *last;
  return out;
}

// torchtune's tokenize_messages_no_special_tokens: each message's parts are encoded separately
// (right-stripped of spaces) and concatenated; a turn starts with BOS and an assistant message ends it
// with EOS. `encode(text, trim_leading_whitespace)` returns ids without BOS/EOS; trimming is asked for
// a continuation of a turn whose previous message did not end with a space (SentencePiece would
// otherwise add its dummy-prefix space). Truncated to max_seq_len when given.
using EncodeForMessages = std::function<std::vector<int64_t>(const std::string& text, bool trim_leading_whitespace)>;
TokenizedMessages tokenize_messages_no_special_tokens(const std::vector<Message>& messages,
                                                      const EncodeForMessages& encode,
                                                      std::optional<int64_t> bos_id, std::optional<int64_t> eos_id,
                                                      std::optional<int64_t> max_seq_len,
                                                      const std::string& truncation_type = "right");

}  // namespace tb::data
