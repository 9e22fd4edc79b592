#include "data/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "config/regular_file.h"

namespace tb::data {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// nullopt when the file is absent; one that is there but is no file (a link to /dev/zero) is refused.
std::optional<Json> read_json(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string text = config::read_input_file(path.string(), kMaxTokenizerJsonBytes);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(path.string() + ": invalid JSON: " + e.what());
  }
}

// A special token as tokenizer_config.json and special_tokens_map.json write it: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_text(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::string();  // null: explicitly none
}

void read_tokens(const Json& config, FolderSpecialTokens& out) {
  const std::pair<const char*, std::string*> keys[] = {
      {"bos_token", &out.bos}, {"eos_token", &out.eos}, {"pad_token", &out.pad}, {"unk_token", &out.unk}};
  for (const auto& [key, field] : keys)
    if (const auto t = token_text(config, key)) *field = *t;
  const auto extra = config.find("additional_special_tokens");
  if (extra != config.end() && extra->is_array()) {
    out.additional.clear();
    for (const auto& t : *extra) {
      if (t.is_string()) out.additional.push_back(t.get<std::string>());
      else if (t.is_object() && t.contains("content")) out.additional.push_back(t["content"].get<std::string>());
    }
  }
}

bool in_ranges(size_t at, const std::vector<std::pair<size_t, size_t>>& ranges) {
  for (const auto& [b, e] : ranges)
    if (at >= b && at < e) return true;
  return false;
}

}  // namespace

FolderSpecialTokens read_folder_special_tokens(const std::string& dir) {
  FolderSpecialTokens out;
  // transformers: tokenizer_config.json's init arguments, then special_tokens_map.json over them.
  if (const auto config = read_json(fs::path(dir) / "tokenizer_config.json")) read_tokens(*config, out);
  if (const auto map = read_json(fs::path(dir) / "special_tokens_map.json")) read_tokens(*map, out);
  if (const auto gen = read_json(fs::path(dir) / "generation_config.json")) {
    const auto it = gen->find("eos_token_id");
    if (it != gen->end() && it->is_number_integer()) out.generation_eos_ids.push_back(it->get<int64_t>());
    if (it != gen->end() && it->is_array())
      for (const auto& id : *it)
        if (id.is_number_integer()) out.generation_eos_ids.push_back(id.get<int64_t>());
  }
  return out;
}

std::shared_ptr<HfTokenizer> HfTokenizer::from_path(const std::string& path, const HfTokenizerOptions& options) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const fs::path file = is_dir ? fs::path(path) / "tokenizer.json" : fs::path(path);
  if (!fs::is_regular_file(file, ec))
    throw std::runtime_error(file.string() + ": no such file" +
                             (is_dir ? " (a model folder needs its tokenizer.json)" : std::string()));
  const std::string dir = file.parent_path().string();

  auto tok = std::shared_ptr<HfTokenizer>(new HfTokenizer());
  BpeOptions bpe;
  bpe.parse_special_tokens = options.parse_special_tokens;
  bpe.max_seq_len = options.max_seq_len;
  bpe.truncation_type = options.truncation_type;
  bpe.prompt_template = options.prompt_template;
  bpe.bos_token = options.bos_token;
  bpe.eos_token = options.eos_token;
  bpe.pad_token = options.pad_token;
  tok->bpe_ = BpeTokenizer::from_file(file.string(), bpe);
  tok->set_max_seq_len(options.max_seq_len);
  tok->set_truncation_type(options.truncation_type);
  tok->prompt_template_ = options.prompt_template;

  // Special tokens: what the user named, else the folder's files (a null there means none), else the
  // tokenizer's own guess for a lone tokenizer.json.
  const FolderSpecialTokens folder = read_folder_special_tokens(dir);
  const bool has_config = fs::is_regular_file(fs::path(dir) / "tokenizer_config.json", ec) ||
                          fs::is_regular_file(fs::path(dir) / "special_tokens_map.json", ec);
  auto resolve = [&](const std::string& given, const std::string& from_folder, int64_t guessed,
                     const char* what) -> int64_t {
    const std::string name = !given.empty() ? given : from_folder;
    if (name.empty()) return has_config && given.empty() ? -1 : guessed;
    const auto id = tok->bpe_->token_to_id(name);
    if (!id) throw std::runtime_error(file.string() + ": the " + what + " token '" + name + "' is not in the vocabulary");
    return *id;
  };
  tok->bos_id_ = resolve(options.bos_token, folder.bos, tok->bpe_->bos_id(), "BOS");
  tok->eos_id_ = resolve(options.eos_token, folder.eos, tok->bpe_->eos_id(), "EOS");
  tok->pad_id_ = resolve(options.pad_token, folder.pad, tok->bpe_->pad_id(), "PAD");
  if (tok->pad_id_ < 0) tok->pad_id_ = tok->eos_id_ >= 0 ? tok->eos_id_ : 0;
  if (tok->eos_id_ >= 0) tok->stop_ids_.push_back(tok->eos_id_);
  for (const int64_t id : folder.generation_eos_ids)
    if (std::find(tok->stop_ids_.begin(), tok->stop_ids_.end(), id) == tok->stop_ids_.end()) tok->stop_ids_.push_back(id);

  if (options.chat_template == "auto") {
    tok->template_ = ChatTemplate::from_model_dir(dir);
  } else if (options.chat_template != "none" && !options.chat_template.empty()) {
    tok->template_.emplace(config::read_input_file(options.chat_template, kMaxChatTemplateBytes), options.chat_template);
  }
  if (tok->template_) {
    // transformers passes the special tokens it knows by name, then the caller's kwargs.
    Json variables = Json::object();
    auto add = [&](const char* key, int64_t id) {
      if (id >= 0) variables[key] = tok->bpe_->id_to_bytes(id);
    };
    add("bos_token", tok->bos_id_);
    add("eos_token", tok->eos_id_);
    if (!folder.pad.empty() || !options.pad_token.empty()) add("pad_token", tok->pad_id_);
    if (!folder.unk.empty()) variables["unk_token"] = folder.unk;
    if (!folder.additional.empty()) variables["additional_special_tokens"] = folder.additional;
    for (auto it = options.template_kwargs.begin(); it != options.template_kwargs.end(); ++it)
      variables[it.key()] = it.value();
    tok->template_->set_variables(std::move(variables));
  }
  return tok;
}

std::vector<int64_t> HfTokenizer::encode(const std::string& text, bool add_bos, bool add_eos) const {
  std::vector<int64_t> ids = bpe_->encode(text, false, false);
  if (add_bos && bos_id_ >= 0) ids.insert(ids.begin(), bos_id_);
  if (add_eos && eos_id_ >= 0) ids.push_back(eos_id_);
  return ids;
}

std::vector<Message> HfTokenizer::templated(const std::vector<Message>& messages) const {
  return prompt_template_ ? prompt_template_->apply(messages) : messages;
}

TemplateEncoding HfTokenizer::encode_conversation(const std::vector<Message>& messages, bool add_generation_prompt,
                                                  const nlohmann::ordered_json& tools) const {
  if (!template_) throw std::logic_error("encode_conversation: this tokenizer has no chat template");
  RenderedConversation rendered = template_->render(messages, add_generation_prompt, tools);
  const BpeTokenizer::Encoding enc = bpe_->encode_with_offsets(rendered.text, false);

  std::vector<std::pair<size_t, size_t>> trained;
  for (size_t i = 0; i < messages.size(); ++i) {
    const MessageSpan& span = rendered.spans[i];
    if (messages[i].masked || !span.found) continue;
    if (messages[i].role != "assistant") {
      trained.emplace_back(span.begin, span.end);
      continue;
    }
    // From the content through the first stop token after it, within what the message wrote.
    size_t end = span.end;
    for (size_t t = 0; t < enc.ids.size(); ++t) {
      const auto [b, e] = enc.offsets[t];
      if (b < span.content_begin || b >= span.end) continue;
      if (std::find(stop_ids_.begin(), stop_ids_.end(), enc.ids[t]) != stop_ids_.end()) {
        end = e;
        break;
      }
    }
    trained.emplace_back(span.content_begin, end);
  }

  TemplateEncoding out;
  out.tokens = enc.ids;
  out.offsets = enc.offsets;
  out.mask.resize(enc.ids.size());
  for (size_t t = 0; t < enc.ids.size(); ++t) out.mask[t] = !in_ranges(enc.offsets[t].first, trained);
  if (const auto n = max_seq_len(); n && static_cast<int64_t>(out.tokens.size()) > *n) {
    out.truncated = true;
    out.tokens = truncate<int64_t>(out.tokens, *n, std::nullopt, truncation_type());
    out.mask = truncate<bool>(out.mask, *n, std::nullopt, truncation_type());
    out.offsets = truncate<std::pair<size_t, size_t>>(out.offsets, *n, std::nullopt, truncation_type());
  }
  out.text = std::move(rendered.text);
  out.spans = std::move(rendered.spans);
  return out;
}

TokenizedMessages HfTokenizer::tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens) const {
  if (!template_) {
    // BpeTokenizer applies the prompt template itself (it was given the same options).
    return bpe_->tokenize_messages(messages, add_end_tokens);
  }
  std::vector<Message> conversation = templated(messages);
  bool generation_prompt = false;
  if (!add_end_tokens) {
    // A prompt for generation: the template writes the assistant's header itself.
    if (!conversation.empty() && conversation.back().role == "assistant" && conversation.back().text().empty())
      conversation.pop_back();
    generation_prompt = conversation.empty() || conversation.back().role != "assistant";
  }
  TemplateEncoding enc = encode_conversation(conversation, generation_prompt);
  TokenizedMessages out;
  out.tokens = std::move(enc.tokens);
  out.mask = std::move(enc.mask);
  out.truncated = enc.truncated;
  return out;
}

}  // namespace tb::data
