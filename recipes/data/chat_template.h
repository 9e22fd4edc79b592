// A model's own chat template: the Jinja `chat_template` a Hugging Face folder ships (chat_template.jinja,
// or tokenizer_config.json's `chat_template`), rendered as transformers' apply_chat_template renders it
// (text/jinja.h), and told where every message landed in the text, so that the loss mask follows the
// template instead of a format of ours.
//
// Where a message landed: the bytes the template wrote while its `for` loop was on that message (the
// interpreter reports loop items by identity, also through `messages[1:]` or an alias). For an assistant
// message the span also says where its header ends: the text a generation prompt would have written
// ("<|im_start|>assistant\n"), found by rendering the conversation before it with and without
// add_generation_prompt. A message the template does not loop over (a system prompt it folds into the
// first user turn) has no span of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizer.h"

namespace tb::text::jinja {
class Template;
struct ChatRenderInputs;
}

namespace tb::data {

// The most a chat template file may hold (real ones are a few KiB to a few dozen): a larger file, a
// device or a FIFO is refused before it is read whole.
constexpr uint64_t kMaxChatTemplateBytes = uint64_t(4) << 20;

struct MessageSpan {
  bool found = false;        // a loop iteration on this message printed something
  size_t begin = 0;          // bytes written while on it: [begin, end)
  size_t end = 0;
  size_t content_begin = 0;  // assistants: after the generation-prompt header (begin for other roles)
};

struct RenderedConversation {
  std::string text;
  std::vector<MessageSpan> spans;  // one per message
};

class ChatTemplate {
 public:
  // Parses `source`; a syntax error throws std::runtime_error "<origin>:<line>:<col>: message".
  ChatTemplate(const std::string& source, std::string origin);

  // The template a model folder (or the folder of a tokenizer.json) ships: chat_template.jinja, else
  // tokenizer_config.json's chat_template (a string, or a list of named templates: "default", or
  // "tool_use" when `for_tools`, as transformers picks). nullopt when it has none.
  static std::optional<ChatTemplate> from_model_dir(const std::string& dir, bool for_tools = false);

  // The variables transformers passes besides the conversation: the special tokens (bos_token,
  // eos_token, ...) and template kwargs such as enable_thinking.
  void set_variables(nlohmann::ordered_json variables) { variables_ = std::move(variables); }
  const nlohmann::ordered_json& variables() const { return variables_; }

  // The conversation as the template writes it, with where each message landed. `tools`: null, or the
  // list of tool definitions. Template errors (raise_exception included) throw std::runtime_error with
  // the template's line.
  RenderedConversation render(const std::vector<Message>& messages, bool add_generation_prompt,
                              const nlohmann::ordered_json& tools = nullptr) const;
  // Text only (no spans).
  std::string render_text(const std::vector<Message>& messages, bool add_generation_prompt,
                          const nlohmann::ordered_json& tools = nullptr) const;

  const std::string& origin() const { return origin_; }
  const std::string& source() const { return source_; }

 private:
  text::jinja::ChatRenderInputs inputs(const std::vector<Message>& messages, bool add_generation_prompt,
                                       const nlohmann::ordered_json& tools) const;

  std::shared_ptr<const text::jinja::Template> template_;
  std::string origin_, source_;
  nlohmann::ordered_json variables_ = nlohmann::ordered_json::object();
};

// A message as chat templates see it: {"role", "content", ...its other fields}. torchtune's "ipython"
// role is the "tool" role of Hugging Face templates.
nlohmann::ordered_json message_json(const Message& message);

}  // namespace tb::data
