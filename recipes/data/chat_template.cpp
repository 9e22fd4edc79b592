#include "data/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "config/regular_file.h"
#include "text/jinja.h"

namespace tb::data {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using text::jinja::RenderObserver;

std::string read_file(const fs::path& path, uint64_t max_bytes) { return config::read_input_file(path.string(), max_bytes); }

// Records, per message, the output written while a loop was on it. Loops nest like brackets: an
// iteration ends when the same loop moves on or ends, so a loop over a message's tool calls does not end
// the message.
// A message's span is the output of the loop iteration on it. Iterations that print nothing do not count:
// Qwen3's template walks messages[::-1] first, only to find the last user query.
class SpanObserver : public RenderObserver {
 public:
  SpanObserver(const Json& messages, std::vector<MessageSpan>& spans) : messages_(messages), spans_(spans) {}

  void on_loop_begin(size_t) override { open_.push_back({-1, 0}); }
  void on_loop_item(const Json* node, size_t offset) override {
    if (open_.empty()) open_.push_back({-1, 0});  // (defensive: an item without a begin)
    close_top(offset);
    open_.back() = {message_index(node), offset};
  }
  void on_loop_end(size_t offset) override {
    if (open_.empty()) return;
    close_top(offset);
    open_.pop_back();
  }

 private:
  int message_index(const Json* node) const {
    if (node == nullptr || !messages_.is_array()) return -1;
    for (size_t i = 0; i < messages_.size(); ++i)
      if (&messages_[i] == node) return static_cast<int>(i);
    return -1;
  }
  void close_top(size_t offset) {
    const auto [index, begin] = open_.back();
    open_.back().first = -1;
    if (index < 0 || offset == begin || spans_[index].found) return;
    spans_[index].found = true;
    spans_[index].begin = begin;
    spans_[index].end = offset;
  }

  const Json& messages_;
  std::vector<MessageSpan>& spans_;
  std::vector<std::pair<int, size_t>> open_;  // per open loop: the current item's message and where it began
};

size_t common_prefix(const std::string& a, size_t a_from, const std::string& b, size_t b_from) {
  size_t n = 0;
  while (a_from + n < a.size() && b_from + n < b.size() && a[a_from + n] == b[b_from + n]) ++n;
  return n;
}

}  // namespace

Json message_json(const Message& message) {
  Json m = Json::object();
  m["role"] = message.role == "ipython" ? std::string("tool") : message.role;
  m["content"] = message.text();
  for (auto it = message.fields.begin(); it != message.fields.end(); ++it)
    if (it.key() != "role" && it.key() != "content") m[it.key()] = it.value();
  return m;
}

ChatTemplate::ChatTemplate(const std::string& source, std::string origin)
    : origin_(std::move(origin)), source_(source) {
  try {
    template_ = std::make_shared<const text::jinja::Template>(source, origin_);
  } catch (const text::jinja::TemplateError& e) {
    throw std::runtime_error(e.what());
  }
}

std::optional<ChatTemplate> ChatTemplate::from_model_dir(const std::string& dir, bool for_tools) {
  const fs::path jinja = fs::path(dir) / "chat_template.jinja";
  std::error_code ec;
  // A file that is there but not a file (a FIFO, a device, a folder) is refused, not passed over.
  if (fs::exists(jinja, ec)) return ChatTemplate(read_file(jinja, kMaxChatTemplateBytes), jinja.string());
  const fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(config_path, ec)) return std::nullopt;
  Json config;
  try {
    config = Json::parse(read_file(config_path, kMaxTokenizerJsonBytes));
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(config_path.string() + ": invalid JSON: " + e.what());
  }
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  const std::string origin = config_path.string() + " chat_template";
  if (it->is_string()) return ChatTemplate(it->get<std::string>(), origin);
  if (it->is_array()) {
    // Named templates: transformers uses "tool_use" when tools are passed and it exists, else "default".
    std::optional<ChatTemplate> fallback;
    for (const auto& named : *it) {
      if (!named.is_object() || !named.contains("name") || !named.contains("template")) continue;
      const std::string name = named["name"].get<std::string>();
      if ((for_tools && name == "tool_use") || (!for_tools && name == "default"))
        return ChatTemplate(named["template"].get<std::string>(), origin + " '" + name + "'");
      if (name == "default") fallback.emplace(named["template"].get<std::string>(), origin + " 'default'");
    }
    if (fallback) return fallback;
    throw std::runtime_error(origin + ": a list of templates without one named 'default'");
  }
  throw std::runtime_error(origin + ": must be a string or a list of {name, template}");
}

text::jinja::ChatRenderInputs ChatTemplate::inputs(const std::vector<Message>& messages, bool add_generation_prompt,
                                                   const Json& tools) const {
  text::jinja::ChatRenderInputs inputs;
  for (const auto& m : messages) inputs.messages.push_back(message_json(m));
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.extra = variables_;
  return inputs;
}

std::string ChatTemplate::render_text(const std::vector<Message>& messages, bool add_generation_prompt,
                                      const Json& tools) const {
  const text::jinja::ChatRenderInputs inputs = this->inputs(messages, add_generation_prompt, tools);
  try {
    return text::jinja::render_chat(*template_, inputs);
  } catch (const text::jinja::TemplateError& e) {
    throw std::runtime_error(e.what());
  }
}

RenderedConversation ChatTemplate::render(const std::vector<Message>& messages, bool add_generation_prompt,
                                          const Json& tools) const {
  const text::jinja::ChatRenderInputs inputs = this->inputs(messages, add_generation_prompt, tools);
  RenderedConversation out;
  out.spans.resize(messages.size());
  SpanObserver observer(inputs.messages, out.spans);
  try {
    out.text = text::jinja::render_chat(*template_, inputs, &observer);
  } catch (const text::jinja::TemplateError& e) {
    throw std::runtime_error(e.what());
  }
  std::vector<size_t> assistant_turns;
  for (size_t i = 0; i < messages.size(); ++i) {
    MessageSpan& span = out.spans[i];
    if (!span.found) continue;
    if (span.end < span.begin) span.end = out.text.size();  // a loop that never reported its end
    span.content_begin = span.begin;
    if (messages[i].role == "assistant") assistant_turns.push_back(i);
  }
  // The header of an assistant turn is what the generation prompt writes after the conversation so far.
  const auto generation_prompt = [&](size_t i) {
    const std::vector<Message> before(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(i));
    const std::string plain = render_text(before, false, tools);
    const std::string prompted = render_text(before, true, tools);
    return prompted.substr(common_prefix(plain, 0, prompted, 0));
  };
  // Rendering each turn's history costs time quadratic in the turns (10,000 messages: minutes). Past
  // kExactTurns assistant turns, when the first two and the last turn's generation prompts are the same
  // text (the prompt does not depend on the history, as in every template we know), the turns between
  // take it too; otherwise every turn is rendered.
  constexpr size_t kExactTurns = 16;
  std::vector<std::optional<std::string>> prompts(assistant_turns.size());
  bool shared_prompt = false;
  if (assistant_turns.size() > kExactTurns) {
    prompts.front() = generation_prompt(assistant_turns.front());
    prompts[1] = generation_prompt(assistant_turns[1]);
    prompts.back() = generation_prompt(assistant_turns.back());
    shared_prompt = prompts[1] == prompts.front() && prompts.back() == prompts.front();
  }
  for (size_t k = 0; k < assistant_turns.size(); ++k) {
    if (!prompts[k]) prompts[k] = shared_prompt ? *prompts.front() : generation_prompt(assistant_turns[k]);
    MessageSpan& span = out.spans[assistant_turns[k]];
    const size_t header = common_prefix(out.text, span.begin, *prompts[k], 0);
    span.content_begin = std::min(span.begin + header, span.end);
  }
  return out;
}

}  // namespace tb::data
