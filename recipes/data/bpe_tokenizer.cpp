#include "data/bpe_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "config/regular_file.h"
#include "text/byte_level.h"
#include "text/json_file.h"
#include "text/tokenizer_json.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace tb::data {
namespace {

using nlohmann::json;

// Llama 3's split pattern (tiktoken's cl100k pattern with digits by three), as its tokenizer.json writes it.
constexpr const char* kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::string read_file(const std::string& path) { return config::read_input_file(path, kMaxTokenizerJsonBytes); }

std::string base64_decode(const std::string& in, bool* ok) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  uint32_t buffer = 0;  // the bits not yet output (fewer than 8) and the new 6: masked, never overflowing
  *ok = true;
  for (const char c : in) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) {
      *ok = false;
      return out;
    }
    buffer = ((buffer << 6) | static_cast<uint32_t>(v)) & 0x3FFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

// torchtune's canonical Llama 3 special tokens (used for a tiktoken file without special_tokens_path).
std::vector<AddedToken> llama3_special_tokens() {
  std::vector<AddedToken> t = {
      {128000, "<|begin_of_text|>", true},
      {128001, "<|end_of_text|>", true},
      {128002, "<|reserved_special_token_0|>", true},
      {128003, "<|reserved_special_token_1|>", true},
      {128004, "<|finetune_right_pad_id|>", true},
      {128005, "<|step_id|>", true},
      {128006, "<|start_header_id|>", true},
      {128007, "<|end_header_id|>", true},
      {128008, "<|eom_id|>", true},
      {128009, "<|eot_id|>", true},
      {128010, "<|python_tag|>", true},
      {128256, "<|image|>", true},
      {128012, "<|video|>", true},
      {128011, "<|reserved_special_token_245|>", true},
  };
  const int reserved = 257 - static_cast<int>(t.size());
  for (int i = 0; i < reserved; ++i)
    t.push_back({128013 + i, "<|reserved_special_token_" + std::to_string(2 + i) + "|>", true});
  for (auto& token : t) token.normalized = false;  // matched in the raw text, as special tokens are
  return t;
}

std::vector<AddedToken> added_tokens_of(const json& root, const std::string& source) {
  std::vector<AddedToken> out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  if (!root["added_tokens"].is_array()) throw std::runtime_error(source + ": 'added_tokens' is not a list");
  for (const auto& t : root["added_tokens"]) {
    if (!t.is_object() || !t.contains("id") || !t.contains("content"))
      throw std::runtime_error(source + ": an entry of 'added_tokens' lacks 'id' or 'content'");
    AddedToken a;
    a.id = t["id"].get<int64_t>();
    a.content = t["content"].get<std::string>();
    a.special = t.value("special", false);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    a.normalized = t.value("normalized", !a.special);
    a.single_word = t.value("single_word", false);
    out.push_back(std::move(a));
  }
  return out;
}

// Python's str.strip() as the Llama 3 message format uses it (Unicode White_Space).
std::string python_strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e) {
    const size_t len = text::valid_sequence_length(reinterpret_cast<const unsigned char*>(s.data()) + b, e - b);
    size_t n = 0;
    if (len == 0 || !text::is_white_space(text::decode_utf8(s.data() + b, &n))) break;
    b += len;
  }
  while (e > b) {
    size_t start = e - 1;
    while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    const size_t len = text::valid_sequence_length(reinterpret_cast<const unsigned char*>(s.data()) + start, e - start);
    size_t n = 0;
    if (len != e - start || !text::is_white_space(text::decode_utf8(s.data() + start, &n))) break;
    e = start;
  }
  return s.substr(b, e - b);
}

// A token name from tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const json& config, const char* key) {
  if (!config.contains(key)) return {};
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

// A pipeline for Llama-3-shaped byte-level vocabularies: a split regex, then ByteLevel; ByteLevel decoder.
std::shared_ptr<text::TokenizerPipeline> byte_level_pipeline(const std::string& regex, bool nfc, text::BpeModel model) {
  std::shared_ptr<const text::Normalizer> normalizer;
  if (nfc) normalizer = std::make_shared<text::UnicodeNormalizer>(text::NormalForm::NFC);
  auto split =
      std::make_shared<text::SplitPreTokenizer>(text::Pattern::regex(regex), text::SplitBehavior::Isolated, false);
  auto byte_level = std::make_shared<text::ByteLevelPreTokenizer>(false, false);
  auto pre = std::make_shared<text::SequencePreTokenizer>(
      std::vector<std::shared_ptr<const text::PreTokenizer>>{split, byte_level});
  return std::make_shared<text::TokenizerPipeline>(normalizer, pre, std::move(model), nullptr,
                                                   std::make_shared<text::ByteLevelDecoder>());
}

}  // namespace

char32_t byte_to_unicode(unsigned char byte) { return text::byte_to_char(byte); }

int unicode_to_byte(char32_t cp) { return text::char_to_byte(cp); }

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_file(const std::string& path, const BpeOptions& options) {
  const std::string text = read_file(path);
  const bool is_json = std::filesystem::path(path).extension() == ".json";
  return is_json ? from_hf_json(text, path, options) : from_tiktoken(text, path, options);
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_hf_json(const std::string& json_text, const std::string& source,
                                                         const BpeOptions& options) {
  std::shared_ptr<BpeTokenizer> tok(new BpeTokenizer());
  tok->pipeline_ = text::load_tokenizer_json(json_text, source);
  tok->finish(source, std::filesystem::path(source).parent_path().string(), options);
  tok->pipeline_->set_encode_special_tokens(!tok->parse_special_);
  return tok;
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_tiktoken(const std::string& text, const std::string& source,
                                                          const BpeOptions& options) {
  std::vector<std::pair<std::string, uint32_t>> vocab;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const auto space = line.find(' ');
    bool ok = space != std::string::npos;
    std::string bytes;
    int64_t rank = -1;
    if (ok) bytes = base64_decode(line.substr(0, space), &ok);
    if (ok) {
      try {
        rank = std::stoll(line.substr(space + 1));
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok || rank < 0 || rank > UINT32_MAX)
      throw std::runtime_error(source + ":" + std::to_string(line_no) +
                               ": expected '<base64 token> <rank>' (a tiktoken BPE file)");
    vocab.emplace_back(text::bytes_to_byte_level(bytes), static_cast<uint32_t>(rank));
  }
  if (vocab.empty()) throw std::runtime_error(source + ": empty tiktoken file");
  std::shared_ptr<BpeTokenizer> tok(new BpeTokenizer());
  tok->pipeline_ = byte_level_pipeline(kLlama3Pattern, false, text::BpeModel::from_ranks(vocab));
  tok->set_added_tokens(llama3_special_tokens());
  tok->finish(source, std::filesystem::path(source).parent_path().string(), options);
  tok->pipeline_->set_encode_special_tokens(!tok->parse_special_);
  return tok;
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_vocab_merges(const std::string& vocab_json_path,
                                                              const std::string& merges_path,
                                                              const VocabMergesOptions& o) {
  const json vocab_json = text::read_json_file(vocab_json_path);
  if (!vocab_json.is_object()) throw std::runtime_error(vocab_json_path + ": expected an object of token: id");
  std::vector<std::pair<std::string, uint32_t>> vocab;
  vocab.reserve(vocab_json.size());
  for (const auto& [token, id] : vocab_json.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
      throw std::runtime_error(vocab_json_path + ": the id of '" + token + "' is not a non-negative integer");
    vocab.emplace_back(token, id.get<uint32_t>());
  }
  // merges.txt as torchtune reads it: an optional "#version" first line, blank lines skipped, two tokens
  // separated by whitespace a line.
  std::vector<std::pair<std::string, std::string>> merges;
  std::istringstream in(read_file(merges_path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string a, b, extra;
    words >> a;
    if (a.empty() || (n == 1 && a.rfind("#version", 0) == 0)) continue;
    if (!(words >> b) || (words >> extra))
      throw std::runtime_error(merges_path + ":" + std::to_string(n) + ": expected two tokens");
    merges.emplace_back(a, b);
  }
  std::shared_ptr<BpeTokenizer> tok(new BpeTokenizer());
  try {
    tok->pipeline_ = byte_level_pipeline(o.split_regex, o.nfc, text::BpeModel(vocab, merges, {}));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(merges_path + ": " + e.what());
  }
  std::vector<AddedToken> specials;
  for (const auto& [content, id] : o.special_tokens) {
    AddedToken t;
    t.id = id;
    t.content = content;
    t.special = true;
    t.normalized = false;
    specials.push_back(std::move(t));
  }
  tok->set_added_tokens(std::move(specials));
  tok->finish(vocab_json_path, std::filesystem::path(vocab_json_path).parent_path().string(), o.options);
  tok->pipeline_->set_encode_special_tokens(!tok->parse_special_);
  return tok;
}

void BpeTokenizer::set_added_tokens(std::vector<AddedToken> tokens) {
  pipeline_->added_vocabulary().set_tokens(tokens, pipeline_->normalizer());
  pipeline_->prepare();
}

int64_t BpeTokenizer::require_id(const std::string& token, const std::string& what) const {
  const auto id = token_to_id(token);
  if (!id) throw std::runtime_error(what + " token '" + token + "' is not in the vocabulary");
  return *id;
}

void BpeTokenizer::finish(const std::string& source, const std::string& sibling_dir, const BpeOptions& options) {
  set_max_seq_len(options.max_seq_len);
  set_truncation_type(options.truncation_type);
  prompt_template_ = options.prompt_template;
  parse_special_ = options.parse_special_tokens;
  if (!options.special_tokens_path.empty()) {
    const json root = text::read_json_file(options.special_tokens_path);
    set_added_tokens(added_tokens_of(root, options.special_tokens_path));
  }
  int64_t max_id = pipeline_->model().max_id();
  for (const auto& t : added_tokens()) max_id = std::max(max_id, t.id);
  vocab_size_ = max_id + 1;

  json config;
  const auto config_path = std::filesystem::path(sibling_dir) / "tokenizer_config.json";
  if (!sibling_dir.empty() && std::filesystem::exists(config_path)) {
    // A broken config beside the tokenizer only loses the token names.
    config = text::try_read_json_file(config_path.string()).value_or(json());
  }
  auto pick = [&](const std::string& given, const char* config_key, std::vector<std::string> candidates,
                  const char* what) -> int64_t {
    if (!given.empty()) return require_id(given, std::string(what) + " (" + source + ")");
    if (config.is_object()) {
      const std::string named = config_token(config, config_key);
      if (!named.empty() && token_to_id(named)) return *token_to_id(named);
    }
    for (const auto& c : candidates)
      if (const auto id = token_to_id(c)) return *id;
    return -1;
  };
  bos_id_ = pick(options.bos_token, "bos_token", {"<|begin_of_text|>", "<s>"}, "BOS");
  eos_id_ = pick(options.eos_token, "eos_token", {"<|end_of_text|>", "</s>", "<|endoftext|>"}, "EOS");
  pad_id_ = pick(options.pad_token, "pad_token", {"<|finetune_right_pad_id|>", "<pad>"}, "PAD");
  if (pad_id_ < 0) pad_id_ = eos_id_ >= 0 ? eos_id_ : 0;

  const char* header[] = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"};
  bool all = bos_id_ >= 0 && eos_id_ >= 0;
  for (const char* h : header) all = all && token_to_id(h).has_value();
  if (all) {
    llama3_ = Llama3Ids{*token_to_id(header[0]), *token_to_id(header[1]), *token_to_id(header[2]),
                        *token_to_id(header[3]), *token_to_id(header[4])};
  } else if (options.require_llama3_tokens) {
    throw std::runtime_error(source +
                             ": lacks the Llama 3 special tokens <|begin_of_text|> <|end_of_text|> "
                             "<|start_header_id|> <|end_header_id|> <|eot_id|> <|eom_id|> <|python_tag|>");
  }
}

std::optional<int64_t> BpeTokenizer::token_to_id(const std::string& token) const {
  if (const auto id = pipeline_->added_vocabulary().token_to_id(token)) return *id;
  const auto id = pipeline_->model().token_to_id(pipeline_->byte_level() ? text::bytes_to_byte_level(token) : token);
  return id ? std::optional<int64_t>(*id) : std::nullopt;
}

std::string BpeTokenizer::id_to_bytes(int64_t id) const {
  if (id >= 0 && id <= UINT32_MAX) {
    if (const AddedToken* t = pipeline_->added_vocabulary().token_of(static_cast<uint32_t>(id))) return t->content;
    if (const std::string* s = pipeline_->model().id_to_token(static_cast<uint32_t>(id))) {
      std::string bytes;
      if (pipeline_->byte_level() && text::byte_level_to_bytes(*s, &bytes)) return bytes;
      return *s;
    }
  }
  throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(vocab_size_));
}

std::vector<AddedToken> BpeTokenizer::added_tokens() const { return pipeline_->added_vocabulary().tokens(); }

bool BpeTokenizer::is_special(int64_t id) const {
  if (id < 0 || id > UINT32_MAX) return false;
  const AddedToken* t = pipeline_->added_vocabulary().token_of(static_cast<uint32_t>(id));
  return t && t->special;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool add_bos, bool add_eos) const {
  const text::Encoding e = pipeline_->encode(text, false);
  std::vector<int64_t> out;
  out.reserve(e.ids.size() + 2);
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  out.insert(out.end(), e.ids.begin(), e.ids.end());
  if (add_eos && eos_id_ >= 0) out.push_back(eos_id_);
  return out;
}

BpeTokenizer::Encoding BpeTokenizer::encode_with_offsets(const std::string& text, bool add_special_tokens) const {
  text::Encoding e = pipeline_->encode(text, add_special_tokens);
  Encoding out;
  out.ids.assign(e.ids.begin(), e.ids.end());
  out.offsets = std::move(e.offsets);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const { return decode(ids, true); }

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  return pipeline_->decode(ids, skip_special_tokens);
}

std::vector<int64_t> BpeTokenizer::stop_tokens() const {
  std::vector<int64_t> out{eos_id_};
  if (llama3_) {
    out.push_back(llama3_->eot);
    out.push_back(llama3_->eom);
  }
  return out;
}

TokenizedMessages BpeTokenizer::tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens) const {
  const auto templated = prompt_template_ ? prompt_template_->apply(messages) : messages;
  if (!llama3_) {
    return tokenize_messages_no_special_tokens(
        templated, [this](const std::string& text, bool) { return encode(text, false, false); },
        bos_id_ >= 0 ? std::optional<int64_t>(bos_id_) : std::nullopt,
        add_end_tokens && eos_id_ >= 0 ? std::optional<int64_t>(eos_id_) : std::nullopt, max_seq_len(),
        truncation_type());
  }
  TokenizedMessages out;
  out.tokens.push_back(bos_id_);
  out.mask.push_back(true);
  for (size_t i = 0; i < templated.size(); ++i) {
    const auto& m = templated[i];
    std::vector<int64_t> t{llama3_->start_header};
    const auto role = encode(python_strip(m.role), false, false);
    t.insert(t.end(), role.begin(), role.end());
    t.push_back(llama3_->end_header);
    const auto blank = encode("\n\n", false, false);
    t.insert(t.end(), blank.begin(), blank.end());
    if (m.ipython) t.push_back(llama3_->python_tag);
    for (const auto& part : m.content) {
      const auto body = encode(python_strip(part), false, false);
      t.insert(t.end(), body.begin(), body.end());
    }
    const bool last = i + 1 == templated.size();
    if (!last || add_end_tokens) t.push_back(m.eot ? llama3_->eot : llama3_->eom);
    out.tokens.insert(out.tokens.end(), t.begin(), t.end());
    out.mask.insert(out.mask.end(), t.size(), m.masked);
    if (max_seq_len() && static_cast<int64_t>(out.tokens.size()) >= *max_seq_len()) {
      out.truncated = !last;  // the messages after this one are dropped
      break;
    }
  }
  if (add_end_tokens) {
    out.tokens.push_back(eos_id_);
    out.mask.push_back(true);
  }
  if (const auto n = max_seq_len()) {
    out.truncated = out.truncated || static_cast<int64_t>(out.tokens.size()) > *n;
    out.tokens = truncate<int64_t>(out.tokens, *n, add_end_tokens ? std::optional<int64_t>(eos_id_) : std::nullopt,
                                   truncation_type());
    out.mask =
        truncate<bool>(out.mask, *n, add_end_tokens ? std::optional<bool>(true) : std::nullopt, truncation_type());
  }
  return out;
}

}  // namespace tb::data
