#include "inference/tokenize_lines.h"

#include <fstream>
#include <ostream>

#include "config/interrupt.h"
#include "config/regular_file.h"
#include "data/dataset.h"
#include "data/hf_tokenizer.h"
#include "data/open_tokenizer.h"
#include "data/sft_datasets.h"
#include "text/json_text.h"

namespace tb::inference {

using Json = nlohmann::ordered_json;

Json tokenize_row(const data::Tokenizer& tokenizer, const data::Row& row, bool add_generation_prompt) {
  data::require_readable(row);
  if (!row.value.is_object()) throw data::DataError(row.file, row.line, "expected a JSON object");
  Json out = Json::object();
  if (row.value.contains("text")) {
    if (!row.value["text"].is_string()) throw data::DataError(row.file, row.line, "'text' is not a string");
    out["ids"] = tokenizer.encode(row.value["text"].get<std::string>(), false, false);
    return out;
  }
  data::ChatOptions chat;
  if (row.value.contains("conversations")) {
    chat.conversation_column = "conversations";
    chat.conversation_style = "sharegpt";
  } else if (!row.value.contains("messages")) {
    throw data::DataError(row.file, row.line, "expected a 'text', 'messages' or 'conversations' key");
  }
  std::vector<data::Message> messages = data::chat_to_messages(row, chat);
  const Json tools = row.value.contains("tools") ? row.value["tools"] : Json();
  if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer); hf && hf->chat_template()) {
    // The template writes the generation prompt itself (and sees the tools).
    const data::TemplateEncoding enc = hf->encode_conversation(messages, add_generation_prompt, tools);
    out["text"] = enc.text;
    out["ids"] = enc.tokens;
    out["mask"] = enc.mask;
    if (enc.truncated) out["truncated"] = true;
    return out;
  }
  if (!tools.is_null()) throw data::DataError(row.file, row.line, "'tools' needs a tokenizer with a chat template");
  if (add_generation_prompt) messages.emplace_back("assistant", "");
  const data::TokenizedMessages tm = tokenizer.tokenize_messages(messages, !add_generation_prompt);
  std::string text;
  for (const auto& piece : data::token_pieces(tokenizer, tm.tokens)) text += piece;
  out["text"] = text;
  out["ids"] = tm.tokens;
  out["mask"] = tm.mask;
  if (tm.truncated) out["truncated"] = true;
  return out;
}

size_t tokenize_file(const data::Tokenizer& tokenizer, const std::string& path, bool jsonl, bool add_generation_prompt,
                     std::ostream& out) {
  std::vector<data::Row> rows;
  if (jsonl) {
    rows = data::read_json_rows(path, path);
  } else {
    // Every line is a text, an empty one too: the output keeps one line per input line. A FIFO would wait
    // for a writer and a device may never end: refused; a line too long to be a text is an error at its line.
    if (const auto what = config::not_a_regular_file(path)) throw data::DataError(path, 0, *what);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw data::DataError(path, 0, "cannot read the file");
    std::string line;
    bool too_long = false;
    for (int n = 1; config::read_bounded_line(in, line, data::kMaxRowBytes, too_long); ++n) {
      if (too_long) throw data::DataError(path, n, "the line is longer than " + config::byte_size_text(data::kMaxRowBytes));
      data::Row row;
      row.file = path;
      row.line = n;
      row.value = Json{{"text", line}};
      rows.push_back(std::move(row));
    }
  }
  for (const auto& row : rows) {
    config::check_interrupt();
    out << text::json_text(tokenize_row(tokenizer, row, add_generation_prompt)) << "\n";
  }
  return rows.size();
}

}  // namespace tb::inference
