#include "data/sft_datasets.h"

#include <algorithm>
#include <stdexcept>

#include "data/text_datasets.h"

namespace tb::data {
namespace {

std::string column(const std::map<std::string, std::string>& map, const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? key : it->second;
}

// The text of an OpenAI-style content: a string, or a list of {"type": "text", "text": ...} parts.
std::vector<std::string> content_parts(const RowJson& content, const Row& row, size_t index) {
  const std::string where = "message " + std::to_string(index);
  if (content.is_string()) return {content.get<std::string>()};
  if (content.is_null()) return {};  // an assistant turn that only calls tools
  if (!content.is_array()) throw DataError(row.file, row.line, where + ": 'content' is neither text nor a list of parts");
  std::vector<std::string> parts;
  for (const auto& part : content) {
    if (!part.is_object() || part.value("type", std::string()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      throw DataError(row.file, row.line, where + ": only text content parts are supported");
    parts.push_back(part["text"].get<std::string>());
  }
  return parts;
}

}  // namespace

MaskingStrategy masking_strategy(std::optional<bool> train_on_input, const std::string& strategy) {
  if (train_on_input) return *train_on_input ? MaskingStrategy::TrainOnAll : MaskingStrategy::TrainOnAssistant;
  if (strategy == "train_on_all") return MaskingStrategy::TrainOnAll;
  if (strategy == "train_on_assistant") return MaskingStrategy::TrainOnAssistant;
  if (strategy == "train_on_last") return MaskingStrategy::TrainOnLast;
  throw std::invalid_argument("masking_strategy must be train_on_all, train_on_assistant or train_on_last, got '" +
                              strategy + "'");
}

void mask_messages(std::vector<Message>& messages, MaskingStrategy strategy) {
  bool marked_last = false;
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->role == "system") {
      it->masked = true;
    } else if (strategy == MaskingStrategy::TrainOnLast) {
      it->masked = !(it->role == "assistant" && !marked_last);
      if (it->role == "assistant") marked_last = true;
    } else if (strategy == MaskingStrategy::TrainOnAll) {
      it->masked = false;
    } else {
      it->masked = it->role != "assistant";
    }
  }
}

std::string alpaca_prompt(const std::string& instruction, const std::string& input) {
  // The Stanford Alpaca prompt format, reproduced so that models tuned on Alpaca data see what they expect.
  if (!input.empty()) {
    return "Below is an instruction that describes a task, paired with an input that provides further context. "
           "Write a response that appropriately completes the request.\n\n### Instruction:\n" +
           instruction + "\n\n### Input:\n" + input + "\n\n### Response:\n";
  }
  return "Below is an instruction that describes a task. Write a response that appropriately completes the "
         "request.\n\n### Instruction:\n" +
         instruction + "\n\n### Response:\n";
}

std::vector<Message> alpaca_to_messages(const Row& row, const AlpacaOptions& options) {
  const std::string instruction = string_column(row, column(options.column_map, "instruction"));
  const std::string input = string_column(row, column(options.column_map, "input"), true);
  const std::string output = string_column(row, column(options.column_map, "output"));
  std::vector<Message> messages{Message("user", alpaca_prompt(instruction, input)), Message("assistant", output)};
  mask_messages(messages, options.masking);
  return messages;
}

std::vector<Message> input_output_to_messages(const Row& row, const InputOutputOptions& options) {
  std::vector<Message> messages;
  if (options.new_system_prompt) messages.emplace_back("system", *options.new_system_prompt, true);
  messages.emplace_back("user", string_column(row, column(options.column_map, "input")));
  messages.emplace_back("assistant", string_column(row, column(options.column_map, "output")));
  mask_messages(messages, options.masking);
  return messages;
}

std::vector<Message> chat_to_messages(const Row& row, const ChatOptions& options) {
  if (!row.value.is_object()) throw DataError(row.file, row.line, "a row must be a JSON object");
  const auto it = row.value.find(options.conversation_column);
  if (it == row.value.end()) throw DataError(row.file, row.line, "missing column '" + options.conversation_column + "'");
  RowJson parsed;
  if (it->is_string()) {
    // A CSV cell holds the conversation as JSON text.
    try {
      parsed = RowJson::parse(it->get<std::string>());
    } catch (const RowJson::parse_error&) {
      throw DataError(row.file, row.line, "column '" + options.conversation_column + "' is text that is not a JSON list");
    }
  }
  const RowJson& conversation = it->is_string() ? parsed : *it;
  if (!conversation.is_array())
    throw DataError(row.file, row.line, "column '" + options.conversation_column + "' is not a list of messages");
  const bool sharegpt = options.conversation_style == "sharegpt";
  if (!sharegpt && options.conversation_style != "openai")
    throw std::invalid_argument("conversation_style must be openai or sharegpt, got '" + options.conversation_style + "'");
  const char* role_key = sharegpt ? "from" : "role";
  const char* content_key = sharegpt ? "value" : "content";
  std::vector<Message> messages;
  if (options.new_system_prompt) messages.emplace_back("system", *options.new_system_prompt, true);
  const auto& turns = conversation;
  for (size_t i = 0; i < turns.size(); ++i) {
    const auto& t = turns[i];
    const std::string where = "message " + std::to_string(i);
    if (!t.is_object() || !t.contains(role_key) || !t[role_key].is_string() || !t.contains(content_key))
      throw DataError(row.file, row.line, where + ": needs '" + role_key + "' and '" + content_key + "'");
    std::string role = t[role_key].get<std::string>();
    if (sharegpt) {
      if (role == "human") role = "user";
      else if (role == "gpt") role = "assistant";
      else if (role != "system")
        throw DataError(row.file, row.line, where + ": 'from' must be system, human or gpt, got '" + role + "'");
    } else if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "ipython") {
      throw DataError(row.file, row.line, where + ": unknown role '" + role + "'");
    }
    if (role == "system" && options.new_system_prompt) continue;
    Message m;
    m.role = role;
    m.content = content_parts(t[content_key], row, i);
    for (const auto& [key, value] : t.items())
      if (key != role_key && key != content_key) m.fields[key] = value;
    // A tool call does not end the turn: the tool answers next.
    if (role == "tool" || role == "ipython") {
      m.eot = false;
      m.ipython = true;
    } else if (role == "assistant" && i + 1 < turns.size()) {
      const std::string next = turns[i + 1].value(role_key, std::string());
      m.eot = !(next == "tool" || next == "ipython");
    }
    messages.push_back(std::move(m));
  }
  mask_messages(messages, options.masking);
  return messages;
}

void validate_messages(const std::vector<Message>& messages, const Row& row) {
  if (messages.size() < 2)
    throw DataError(row.file, row.line,
                    "a conversation needs at least one user and one assistant message, got " +
                        std::to_string(messages.size()) + " message(s)");
  bool seen_user = false;
  std::string previous;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& role = messages[i].role;
    if (role == "system" && i > 0)
      throw DataError(row.file, row.line, "system message at position " + std::to_string(i) + " (only the first may be)");
    if (role == "user" && previous == "user")
      throw DataError(row.file, row.line, "two user messages in a row at position " + std::to_string(i));
    if (role == "assistant" && !seen_user)
      throw DataError(row.file, row.line, "assistant message before any user message at position " + std::to_string(i));
    if (role == "user") seen_user = true;
    previous = role;
  }
}

std::shared_ptr<InMemoryDataset> make_sft_dataset(RowReader& rows, const MessageTransform& transform,
                                                  const Tokenizer& tokenizer, const DatasetOrigin& origin) {
  SampleStore samples;
  DatasetStats stats;
  for_each_row(rows, origin, stats, [&](const Row& row) {
    std::vector<Message> messages = transform(row);
    validate_messages(messages, row);
    for (Message& m : messages)
      for (auto& part : m.content) part = usable_prefix(std::move(part), tokenizer);
    const TokenizedMessages tm = tokenizer.tokenize_messages(messages);
    Sample s;
    s.labels = shifted_labels(tm.tokens, tm.mask);
    s.tokens = tm.tokens;
    if (std::all_of(s.labels.begin(), s.labels.end(), [](int64_t l) { return l == kIgnoreIndex; })) {
      if (stats.fully_masked++ == 0) stats.first_fully_masked = row.file + ":" + std::to_string(row.line);
      return;
    }
    stats.truncated += tm.truncated;
    stats.count_sample(s);
    samples.add(s);
  });
  samples.shrink_to_fit();
  const std::string description = origin.component + ": " + std::to_string(samples.size()) + " samples from " +
                                  origin.files;
  return std::make_shared<InMemoryDataset>(std::move(samples), description, std::move(stats));
}

}  // namespace tb::data
