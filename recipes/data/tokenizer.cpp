#include "data/tokenizer.h"

#include <stdexcept>

namespace tb::data {

std::string Message::text() const {
  std::string out;
  for (const auto& part : content) out += part;
  return out;
}

void Tokenizer::set_truncation_type(const std::string& type) {
  if (type != "left" && type != "right")
    throw std::invalid_argument("truncation_type must be 'left' or 'right', got '" + type + "'");
  truncation_type_ = type;
}

PromptTemplate PromptTemplate::custom(std::map<std::string, std::pair<std::string, std::string>> tags) {
  PromptTemplate t;
  t.kind_ = Kind::Custom;
  t.tags_ = std::move(tags);
  return t;
}

PromptTemplate PromptTemplate::llama2_chat() {
  PromptTemplate t;
  t.kind_ = Kind::Llama2Chat;
  t.tags_ = {{"system", {"<<SYS>>\n", "\n<</SYS>>\n\n"}}, {"user", {"[INST] ", " [/INST] "}}};
  return t;
}

PromptTemplate PromptTemplate::mistral_chat() {
  PromptTemplate t;
  t.kind_ = Kind::MistralChat;
  t.tags_ = {{"user", {"[INST] ", " [/INST] "}}, {"assistant", {"", ""}}, {"ipython", {"", ""}}};
  return t;
}

PromptTemplate PromptTemplate::chatml() {
  PromptTemplate t;
  t.kind_ = Kind::ChatML;
  t.tags_ = {{"system", {"<|im_start|>system\n", "<|im_end|>\n"}},
             {"user", {"<|im_start|>user\n", "<|im_end|>\n"}},
             {"assistant", {"<|im_start|>assistant\n", "<|im_end|>\n"}},
             {"ipython", {"", ""}}};
  return t;
}

PromptTemplate PromptTemplate::from_name(const std::string& name) {
  auto is = [&](const char* short_name, const char* dotted) { return name == short_name || name == dotted; };
  if (is("Llama2ChatTemplate", "torchtune.models.llama2.Llama2ChatTemplate")) return llama2_chat();
  if (is("MistralChatTemplate", "torchtune.models.mistral.MistralChatTemplate")) return mistral_chat();
  if (is("ChatMLTemplate", "torchtune.data.ChatMLTemplate")) return chatml();
  // torchtune's task templates: tags around the user's text only.
  if (is("GrammarErrorCorrectionTemplate", "torchtune.data.GrammarErrorCorrectionTemplate"))
    return custom({{"user", {"Correct this to standard English: ", "\n---\nCorrected: "}}});
  if (is("SummarizeTemplate", "torchtune.data.SummarizeTemplate"))
    return custom({{"user", {"Summarize this dialogue:\n", "\n---\nSummary:\n"}}});
  if (is("QuestionAnswerTemplate", "torchtune.data.QuestionAnswerTemplate"))
    return custom({{"user", {"Question: ", "\n\nAnswer: "}}});
  throw std::invalid_argument("unknown prompt_template '" + name +
                              "' (known: torchtune.models.llama2.Llama2ChatTemplate, "
                              "torchtune.models.mistral.MistralChatTemplate, torchtune.data.ChatMLTemplate, "
                              "torchtune.data.GrammarErrorCorrectionTemplate, torchtune.data.SummarizeTemplate, "
                              "torchtune.data.QuestionAnswerTemplate, null, or a map role: [prepend, append])");
}

std::vector<Message> PromptTemplate::apply(const std::vector<Message>& messages) const {
  std::vector<Message> out;
  out.reserve(messages.size());
  if (kind_ == Kind::Llama2Chat) {
    // The system text goes inside every later user turn, after "[INST] ", as Llama 2 was trained.
    std::vector<std::string> system_parts;
    for (const auto& m : messages) {
      if (m.role == "system") {
        system_parts = {tags_.at("system").first};
        system_parts.insert(system_parts.end(), m.content.begin(), m.content.end());
        system_parts.push_back(tags_.at("system").second);
        continue;
      }
      Message formatted = m;
      if (m.role == "user") {
        formatted.content = {tags_.at("user").first};
        formatted.content.insert(formatted.content.end(), system_parts.begin(), system_parts.end());
        formatted.content.insert(formatted.content.end(), m.content.begin(), m.content.end());
        formatted.content.push_back(tags_.at("user").second);
      }
      out.push_back(std::move(formatted));
    }
    return out;
  }
  if (kind_ == Kind::MistralChat) {
    // Mistral's template adds its (possibly empty) tags around every message.
    for (const auto& m : messages) {
      if (m.role == "system") throw std::invalid_argument("system prompts are not supported by MistralChatTemplate");
      Message formatted = m;
      const auto it = tags_.find(m.role);
      if (it != tags_.end()) {
        formatted.content = {it->second.first};
        formatted.content.insert(formatted.content.end(), m.content.begin(), m.content.end());
        formatted.content.push_back(it->second.second);
      }
      out.push_back(std::move(formatted));
    }
    return out;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    Message formatted = m;
    const auto it = tags_.find(m.role);
    // ChatML leaves a trailing empty assistant message open: generation continues after its tag.
    const bool open_turn =
        kind_ == Kind::ChatML && m.role == "assistant" && i + 1 == messages.size() && m.text().empty();
    if (it != tags_.end()) {
      if (!it->second.first.empty()) formatted.content.insert(formatted.content.begin(), it->second.first);
      if (!it->second.second.empty() && !open_turn) formatted.content.push_back(it->second.second);
    }
    out.push_back(std::move(formatted));
  }
  return out;
}

namespace {
std::string rstrip_spaces(const std::string& s) {
  const auto end = s.find_last_not_of(' ');
  return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}
}  // namespace

TokenizedMessages tokenize_messages_no_special_tokens(const std::vector<Message>& messages,
                                                      const EncodeForMessages& encode,
                                                      std::optional<int64_t> bos_id, std::optional<int64_t> eos_id,
                                                      std::optional<int64_t> max_seq_len,
                                                      const std::string& truncation_type) {
  TokenizedMessages out;
  bool start_of_turn = true;
  bool prev_ends_with_space = false;
  bool last_masked = false;
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& message = messages[m];
    last_masked = message.masked;
    const bool end_of_turn = message.role == "assistant";
    if (start_of_turn && bos_id) {
      out.tokens.push_back(*bos_id);
      out.mask.push_back(message.masked);
    }
    const bool trim = !start_of_turn && !prev_ends_with_space;
    std::vector<int64_t> tokens;
    for (const auto& part : message.content) {
      const auto ids = encode(rstrip_spaces(part), trim);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
    }
    if (!message.content.empty()) {
      const auto& last = message.content.back();
      prev_ends_with_space = !last.empty() && last.back() == ' ';
    }
    out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
    out.mask.insert(out.mask.end(), tokens.size(), message.masked);
    if (end_of_turn) {
      if (eos_id) {
        out.tokens.push_back(*eos_id);
        out.mask.push_back(message.masked);
      }
      start_of_turn = true;
    } else {
      start_of_turn = false;
    }
    if (max_seq_len && static_cast<int64_t>(out.tokens.size()) >= *max_seq_len) {
      out.truncated = m + 1 < messages.size();
      break;
    }
  }
  if (max_seq_len) {
    out.truncated = out.truncated || static_cast<int64_t>(out.tokens.size()) > *max_seq_len;
    out.tokens = truncate<int64_t>(out.tokens, *max_seq_len, eos_id, truncation_type);
    out.mask = truncate<bool>(out.mask, *max_seq_len, eos_id ? std::optional<bool>(last_masked) : std::nullopt,
                              truncation_type);
  }
  return out;
}

}  // namespace tb::data
