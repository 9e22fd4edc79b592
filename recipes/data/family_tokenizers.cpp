#include "data/family_tokenizers.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/bpe_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "text/json_file.h"

namespace tb::data {
namespace {

// The split patterns of the models' own tokenizer.json files.
const char* kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* kCl100kPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::map<std::string, int64_t> qwen_special_tokens(QwenVersion version) {
  std::map<std::string, int64_t> t = {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}};
  if (version == QwenVersion::Qwen2) return t;
  const char* qwen2_5[] = {"<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
                           "<|quad_start|>",       "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>",
                           "<|vision_pad|>",       "<|image_pad|>",      "<|video_pad|>",  "<tool_call>",
                           "</tool_call>",         "<|fim_prefix|>",     "<|fim_middle|>", "<|fim_suffix|>",
                           "<|fim_pad|>",          "<|repo_name|>",      "<|file_sep|>"};
  int64_t id = 151646;
  for (const char* s : qwen2_5) t[s] = id++;
  if (version == QwenVersion::Qwen3)
    for (const char* s : {"<tool_response>", "</tool_response>", "<think>", "</think>"}) t[s] = id++;
  return t;
}

std::map<std::string, int64_t> phi3_special_tokens() {
  return {{"<|endoftext|>", 32000},     {"<|assistant|>", 32001},     {"<|placeholder1|>", 32002},
          {"<|placeholder2|>", 32003},  {"<|placeholder3|>", 32004},  {"<|placeholder4|>", 32005},
          {"<|system|>", 32006},        {"<|end|>", 32007},           {"<|placeholder5|>", 32008},
          {"<|placeholder6|>", 32009},  {"<|user|>", 32010}};
}

// Phi-4's: the named tokens, then <|dummy_4|>... on every id up to 100351 that is left.
std::map<std::string, int64_t> phi4_special_tokens() {
  std::map<std::string, int64_t> t = {{"<|dummy_0|>", 100256},  {"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258},
                                      {"<|fim_middle|>", 100259}, {"<|fim_suffix|>", 100260}, {"<|dummy_1|>", 100261},
                                      {"<|dummy_2|>", 100262},  {"<|dummy_3|>", 100263},  {"<|im_start|>", 100264},
                                      {"<|im_end|>", 100265},   {"<|im_sep|>", 100266},  {"<|endofprompt|>", 100276}};
  int dummy = 4;
  for (int64_t id = 100267; id < 100352; ++id)
    if (id != 100276) t["<|dummy_" + std::to_string(dummy++) + "|>"] = id;
  return t;
}

int64_t special_id(const std::map<std::string, int64_t>& tokens, const std::string& name, const std::string& source) {
  const auto it = tokens.find(name);
  if (it == tokens.end()) throw std::runtime_error(source + ": the special tokens lack " + name);
  return it->second;
}

std::vector<int64_t>& append(std::vector<int64_t>& out, const std::vector<int64_t>& ids) {
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

// The message loops stop once max_seq_len tokens are reached.
bool reached_max(const Tokenizer& tokenizer, const TokenizedMessages& out) {
  return tokenizer.max_seq_len() && static_cast<int64_t>(out.tokens.size()) >= *tokenizer.max_seq_len();
}

// torchtune's final truncation of tokens and mask: EOS (and mask true) forced last when end tokens are added.
void truncate_in_place(const Tokenizer& tokenizer, TokenizedMessages& out, bool add_end_tokens, int64_t eos) {
  const int64_t max_seq_len = *tokenizer.max_seq_len();
  const std::string& type = tokenizer.truncation_type();
  out.truncated = out.truncated || static_cast<int64_t>(out.tokens.size()) > max_seq_len;
  out.tokens = truncate(out.tokens, max_seq_len, add_end_tokens ? std::optional<int64_t>(eos) : std::nullopt, type);
  out.mask = truncate(out.mask, max_seq_len, add_end_tokens ? std::optional<bool>(true) : std::nullopt, type);
}

// Delegates text <-> ids to a BPE built from vocab.json + merges.txt.
class VocabMergesTokenizer : public Tokenizer {
 public:
  VocabMergesTokenizer(const std::string& vocab, const std::string& merges, const char* pattern, bool nfc,
                       std::map<std::string, int64_t> specials, const FamilyTokenizerOptions& options)
      : special_(std::move(specials)) {
    VocabMergesOptions o;
    o.split_regex = pattern;
    o.nfc = nfc;
    o.special_tokens = special_;
    bpe_ = BpeTokenizer::from_vocab_merges(vocab, merges, o);
    set_max_seq_len(options.max_seq_len);
    set_truncation_type(options.truncation_type);
    prompt_template_ = options.prompt_template;
  }

  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override {
    std::vector<int64_t> out;
    if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
    append(out, bpe_->encode(text, false, false));
    if (add_eos && eos_id_ >= 0) out.push_back(eos_id_);
    return out;
  }
  std::string decode(const std::vector<int64_t>& ids) const override { return bpe_->decode(ids, true); }
  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t vocab_size() const override { return bpe_->vocab_size(); }
  std::string id_to_token(int64_t id) const override { return bpe_->id_to_token(id); }
  const BpeTokenizer& bpe() const { return *bpe_; }

 protected:
  std::vector<Message> templated(const std::vector<Message>& messages) const {
    return prompt_template_ ? prompt_template_->apply(messages) : messages;
  }
  std::vector<int64_t> text(const std::string& s) const { return bpe_->encode(s, false, false); }

  std::shared_ptr<BpeTokenizer> bpe_;
  std::map<std::string, int64_t> special_;
  std::optional<PromptTemplate> prompt_template_;
  int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = 0;
};

class QwenTokenizer : public VocabMergesTokenizer {
 public:
  QwenTokenizer(QwenVersion version, const std::string& vocab, const std::string& merges,
                std::map<std::string, int64_t> specials, const FamilyTokenizerOptions& options)
      : VocabMergesTokenizer(vocab, merges, kQwen2Pattern, true, std::move(specials), options), version_(version) {
    if (prompt_template_ && prompt_template_->kind() == PromptTemplate::Kind::ChatML)
      throw std::invalid_argument(
          "ChatMLTemplate would wrap every message twice: the Qwen tokenizers write <|im_start|> turns themselves");
    eos_id_ = special_id(special_, "<|im_end|>", vocab);
    pad_id_ = special_id(special_, "<|endoftext|>", vocab);
    im_start_ = special_id(special_, "<|im_start|>", vocab);
    if (version_ != QwenVersion::Qwen2) {
      tool_call_start_ = special_id(special_, "<tool_call>", vocab);
      tool_call_end_ = special_id(special_, "</tool_call>", vocab);
    }
  }

  std::vector<int64_t> stop_tokens() const override { return {eos_id_, pad_id_}; }

  TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const override {
    const std::vector<Message> turns = templated(messages);
    TokenizedMessages out;
    for (size_t i = 0; i < turns.size(); ++i) {
      std::vector<int64_t> tokens = header(turns, i);
      for (const auto& part : turns[i].content) append(tokens, text(part));
      append(tokens, footer(turns, i));
      out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
      out.mask.insert(out.mask.end(), tokens.size(), turns[i].masked);
      if (reached_max(*this, out)) break;
    }
    if (add_end_tokens) {
      out.tokens.push_back(eos_id_);
      out.mask.push_back(out.mask.empty() ? true : static_cast<bool>(out.mask.back()));
    }
    if (max_seq_len()) truncate_in_place(*this, out, add_end_tokens, eos_id_);
    return out;
  }

 private:
  void open_turn(std::vector<int64_t>& tokens, const std::string& role) const {
    tokens.push_back(im_start_);
    append(tokens, text(role + "\n"));
  }
  void close_turn(std::vector<int64_t>& tokens) const {
    tokens.push_back(eos_id_);
    append(tokens, text("\n"));
  }

  std::vector<int64_t> header(const std::vector<Message>& m, size_t i) const {
    std::vector<int64_t> tokens;
    if (version_ == QwenVersion::Qwen2) {
      if (m[i].role != "ipython") open_turn(tokens, m[i].role);
      return tokens;
    }
    if (m[i].role == "ipython") {
      // Consecutive tool results share one user turn.
      if (i == 0 || m[i - 1].role != "ipython") {
        open_turn(tokens, "user");
        append(tokens, text("<tool_response>\n"));
      } else {
        append(tokens, text("\n<tool_response>\n"));
      }
      return tokens;
    }
    open_turn(tokens, m[i].role);
    if (m[i].role == "assistant" && m[i].ipython) {
      tokens.push_back(tool_call_start_);
      append(tokens, text("\n"));
    }
    return tokens;
  }

  std::vector<int64_t> footer(const std::vector<Message>& m, size_t i) const {
    std::vector<int64_t> tokens;
    const bool last_assistant = m[i].role == "assistant" && i + 1 == m.size();
    if (version_ == QwenVersion::Qwen2) {
      if (m[i].role != "ipython" && !last_assistant) close_turn(tokens);
      return tokens;
    }
    if (m[i].role == "ipython") {
      append(tokens, text("\n</tool_response>"));
      if (i + 1 == m.size() || m[i + 1].role != "ipython") close_turn(tokens);
      return tokens;
    }
    if (m[i].role == "assistant" && m[i].ipython) {
      append(tokens, text("\n"));
      tokens.push_back(tool_call_end_);
    }
    if (!last_assistant) close_turn(tokens);
    return tokens;
  }

  QwenVersion version_;
  int64_t im_start_ = -1, tool_call_start_ = -1, tool_call_end_ = -1;
};

class Phi4Tokenizer : public VocabMergesTokenizer {
 public:
  Phi4Tokenizer(const std::string& vocab, const std::string& merges, std::map<std::string, int64_t> specials,
                const FamilyTokenizerOptions& options)
      : VocabMergesTokenizer(vocab, merges, kCl100kPattern, false, std::move(specials), options) {
    eos_id_ = special_id(special_, "<|im_end|>", vocab);
    bos_id_ = special_id(special_, "<|endoftext|>", vocab);
    pad_id_ = special_id(special_, "<|dummy_85|>", vocab);
    im_start_ = special_id(special_, "<|im_start|>", vocab);
    im_sep_ = special_id(special_, "<|im_sep|>", vocab);
  }

  TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const override {
    TokenizedMessages out;
    for (const Message& m : templated(messages)) {
      std::vector<int64_t> tokens = {im_start_};
      append(tokens, text(m.role));
      tokens.push_back(im_sep_);
      for (const auto& part : m.content) append(tokens, text(rstrip_spaces(part)));
      // An assistant turn is closed only when end tokens are asked for (not for a generation prompt).
      if (m.role != "assistant" || add_end_tokens) tokens.push_back(eos_id_);
      out.tokens.insert(out.tokens.end(), tokens.begin(), tokens.end());
      out.mask.insert(out.mask.end(), tokens.size(), m.masked);
      if (reached_max(*this, out)) break;
    }
    if (reached_max(*this, out)) truncate_in_place(*this, out, add_end_tokens, eos_id_);
    return out;
  }

 private:
  static std::string rstrip_spaces(const std::string& s) { return s.substr(0, s.find_last_not_of(' ') + 1); }
  int64_t im_start_ = -1, im_sep_ = -1;
};

class Phi3MiniTokenizer : public Tokenizer {
 public:
  Phi3MiniTokenizer(const std::string& path, std::map<std::string, int64_t> specials,
                    const FamilyTokenizerOptions& options)
      : special_(std::move(specials)) {
    spm_ = SentencePieceTokenizer::from_file(path);
    set_max_seq_len(options.max_seq_len);
    set_truncation_type(options.truncation_type);
    prompt_template_ = options.prompt_template;
    eos_id_ = special_id(special_, "<|endoftext|>", path);
    user_ = special_id(special_, "<|user|>", path);
    assistant_ = special_id(special_, "<|assistant|>", path);
    system_ = special_id(special_, "<|system|>", path);
    end_ = special_id(special_, "<|end|>", path);
  }

  // SentencePiece's own BOS/EOS, as torchtune's encode (EOS here is </s>; eos_id() is <|endoftext|>).
  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override {
    return spm_->encode(text, add_bos, add_eos);
  }
  // Skips the ids Phi-3 reserves for its special tokens (32000-32064), as torchtune.
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<int64_t> kept;
    for (const int64_t id : ids)
      if (id < 32000 || id > 32064) kept.push_back(id);
    return spm_->decode(kept);
  }
  int64_t bos_id() const override { return spm_->bos_id(); }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return eos_id_; }
  int64_t vocab_size() const override { return spm_->vocab_size(); }
  const SentencePieceTokenizer& spm() const { return *spm_; }
  const std::map<std::string, int64_t>& special_tokens() const { return special_; }
  std::string id_to_token(int64_t id) const override {
    for (const auto& [content, special] : special_)
      if (special == id) return content;
    return spm_->id_to_token(id);
  }

  // torchtune's Phi3MiniTokenizer.tokenize_messages: BOS opens a turn, a role token and a newline head
  // each message, <|end|> and a newline close it; an assistant message ends the turn (EOS when end
  // tokens are asked for, and the next message opens a new turn with BOS).
  TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const override {
    const std::vector<Message> turns = prompt_template_ ? prompt_template_->apply(messages) : messages;
    const std::vector<int64_t> newline = spm_->encode("\n", false, false);
    TokenizedMessages out;
    bool start_of_turn = true, end_of_turn = false;
    auto push = [&](int64_t id, bool masked) {
      out.tokens.push_back(id);
      out.mask.push_back(masked);
    };
    for (const Message& m : turns) {
      if (start_of_turn) push(bos_id(), m.masked);
      if (m.role == "user") {
        push(user_, m.masked);
      } else if (m.role == "assistant") {
        push(assistant_, m.masked);
        end_of_turn = true;
      } else if (m.role == "system") {
        push(system_, m.masked);
      } else {
        throw std::invalid_argument("phi3_mini_tokenizer: unknown role '" + m.role + "'");
      }
      for (const int64_t id : newline) push(id, m.masked);
      std::vector<int64_t> tokens;
      for (const auto& part : m.content)
        append(tokens, spm_->encode(part.substr(0, part.find_last_not_of(' ') + 1), false, false, true));
      tokens.push_back(end_);
      append(tokens, newline);
      for (const int64_t id : tokens) push(id, m.masked);
      if (end_of_turn && add_end_tokens) {
        push(eos_id_, m.masked);
        end_of_turn = false;
        start_of_turn = true;
      } else {
        start_of_turn = false;
      }
      if (reached_max(*this, out)) break;
    }
    if (reached_max(*this, out)) truncate_in_place(*this, out, add_end_tokens, eos_id_);
    return out;
  }

 private:
  std::shared_ptr<SentencePieceTokenizer> spm_;
  std::map<std::string, int64_t> special_;
  std::optional<PromptTemplate> prompt_template_;
  int64_t eos_id_ = -1, user_ = -1, assistant_ = -1, system_ = -1, end_ = -1;
};

}  // namespace

std::shared_ptr<Tokenizer> make_qwen_tokenizer(QwenVersion version, const std::string& vocab_path,
                                               const std::string& merges_path, const FamilyTokenizerOptions& options) {
  auto specials = options.special_tokens.empty() ? qwen_special_tokens(version) : options.special_tokens;
  return std::make_shared<QwenTokenizer>(version, vocab_path, merges_path, std::move(specials), options);
}

std::shared_ptr<Tokenizer> make_phi3_mini_tokenizer(const std::string& spm_path, const FamilyTokenizerOptions& options) {
  auto specials = options.special_tokens.empty() ? phi3_special_tokens() : options.special_tokens;
  return std::make_shared<Phi3MiniTokenizer>(spm_path, std::move(specials), options);
}

std::shared_ptr<Tokenizer> make_phi4_tokenizer(const std::string& vocab_path, const std::string& merges_path,
                                               const FamilyTokenizerOptions& options) {
  auto specials = options.special_tokens.empty() ? phi4_special_tokens() : options.special_tokens;
  return std::make_shared<Phi4Tokenizer>(vocab_path, merges_path, std::move(specials), options);
}

std::optional<SentencePieceWithSpecials> sentencepiece_with_specials(const Tokenizer& tokenizer) {
  const auto* t = dynamic_cast<const Phi3MiniTokenizer*>(&tokenizer);
  if (!t) return std::nullopt;
  return SentencePieceWithSpecials{&t->spm(), &t->special_tokens()};
}

const BpeTokenizer* vocab_merges_bpe(const Tokenizer& tokenizer) {
  const auto* t = dynamic_cast<const VocabMergesTokenizer*>(&tokenizer);
  return t ? &t->bpe() : nullptr;
}

std::map<std::string, int64_t> read_added_tokens(const std::string& tokenizer_json_path) {
  const nlohmann::json root = text::read_json_file(tokenizer_json_path);
  std::map<std::string, int64_t> out;
  const auto added = root.find("added_tokens");
  if (added == root.end() || !added->is_array())
    throw std::runtime_error(tokenizer_json_path + ": has no added_tokens list");
  for (const auto& t : *added) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() || !t.contains("id") ||
        !t["id"].is_number_integer())
      throw std::runtime_error(tokenizer_json_path + ": an added token without a string content and an integer id");
    out[t["content"].get<std::string>()] = t["id"].get<int64_t>();
  }
  return out;
}

}  // namespace tb::data
