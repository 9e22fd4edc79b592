#include "data/bpe_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/unicode_text.h"

namespace tb::data {
namespace {

using nlohmann::json;

struct ByteMap {
  char32_t to_unicode[256];
  std::unordered_map<char32_t, int> to_byte;
  ByteMap() {
    // Printable Latin-1 bytes stand for themselves; the others are shifted past U+00FF in order.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_unicode[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_unicode[b]] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open tokenizer file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The raw bytes of a byte-level vocabulary entry; false if a code point is outside the byte alphabet.
bool byte_level_to_bytes(const std::string& token, std::string* out) {
  out->clear();
  for (const auto& cp : unicode::decode_utf8(token)) {
    const int b = unicode_to_byte(cp.value);
    if (b < 0) return false;
    out->push_back(static_cast<char>(b));
  }
  return true;
}

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
  int bits = 0, buffer = 0;
  *ok = true;
  for (const char c : in) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) {
      *ok = false;
      return out;
    }
    buffer = (buffer << 6) | v;
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
      {128000, "<|begin_of_text|>", true},         {128001, "<|end_of_text|>", true},
      {128002, "<|reserved_special_token_0|>", true}, {128003, "<|reserved_special_token_1|>", true},
      {128004, "<|finetune_right_pad_id|>", true}, {128005, "<|step_id|>", true},
      {128006, "<|start_header_id|>", true},       {128007, "<|end_header_id|>", true},
      {128008, "<|eom_id|>", true},                {128009, "<|eot_id|>", true},
      {128010, "<|python_tag|>", true},            {128256, "<|image|>", true},
      {128012, "<|video|>", true},                 {128011, "<|reserved_special_token_245|>", true},
  };
  const int reserved = 257 - static_cast<int>(t.size());
  for (int i = 0; i < reserved; ++i)
    t.push_back({128013 + i, "<|reserved_special_token_" + std::to_string(2 + i) + "|>", true});
  return t;
}

std::vector<AddedToken> added_tokens_of(const json& root, const std::string& source) {
  std::vector<AddedToken> out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  if (!root["added_tokens"].is_array()) throw std::runtime_error(source + ": 'added_tokens' is not a list");
  for (const auto& t : root["added_tokens"]) {
    if (!t.is_object() || !t.contains("id") || !t.contains("content"))
      throw std::runtime_error(source + ": an entry of 'added_tokens' lacks 'id' or 'content'");
    out.push_back({t["id"].get<int64_t>(), t["content"].get<std::string>(), t.value("special", false)});
  }
  return out;
}

std::string python_strip(const std::string& s) {
  const auto cps = unicode::decode_utf8(s);
  size_t b = 0, e = cps.size();
  while (b < e && unicode::is_whitespace(cps[b].value)) ++b;
  while (e > b && unicode::is_whitespace(cps[e - 1].value)) --e;
  if (b == e) return std::string();
  return s.substr(cps[b].begin, cps[e - 1].end - cps[b].begin);
}

// A token name from tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const json& config, const char* key) {
  if (!config.contains(key)) return {};
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

}  // namespace

char32_t byte_to_unicode(unsigned char byte) { return byte_map().to_unicode[byte]; }

int unicode_to_byte(char32_t cp) {
  const auto& m = byte_map().to_byte;
  const auto it = m.find(cp);
  return it == m.end() ? -1 : it->second;
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_file(const std::string& path, const BpeOptions& options) {
  const std::string text = read_file(path);
  const bool is_json = std::filesystem::path(path).extension() == ".json";
  return is_json ? from_hf_json(text, path, options) : from_tiktoken(text, path, options);
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_hf_json(const std::string& json_text, const std::string& source,
                                                         const BpeOptions& options) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(source + ": not valid JSON (" + e.what() + ")");
  }
  auto fail = [&](const std::string& why) { return std::runtime_error(source + ": " + why); };
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    throw fail("no 'model' object: not a Hugging Face tokenizer.json");
  const auto& model = root["model"];
  if (model.value("type", std::string("BPE")) != "BPE")
    throw fail("model type '" + model.value("type", std::string()) + "' is not supported (only byte-level BPE)");
  if (root.contains("normalizer") && !root["normalizer"].is_null())
    throw fail("a normalizer is not supported (byte-level BPE tokenizers such as Llama 3's have none)");
  if (model.value("byte_fallback", false)) throw fail("byte_fallback BPE is not supported (only byte-level BPE)");

  std::shared_ptr<BpeTokenizer> tok(new BpeTokenizer());
  // The pre-tokenizer: ByteLevel with the GPT-2 regex, or Split(Llama 3 regex) + ByteLevel(no regex).
  const json pre = root.value("pre_tokenizer", json());
  std::vector<json> steps;
  if (pre.is_object() && pre.value("type", std::string()) == "Sequence") {
    for (const auto& p : pre.value("pretokenizers", json::array())) steps.push_back(p);
  } else if (pre.is_object()) {
    steps.push_back(pre);
  }
  bool byte_level = false, have_pattern = false;
  for (const auto& step : steps) {
    const std::string type = step.value("type", std::string());
    if (type == "ByteLevel") {
      byte_level = true;
      if (step.value("add_prefix_space", false)) throw fail("ByteLevel add_prefix_space is not supported");
      if (step.value("use_regex", true)) {
        tok->pattern_ = SplitPattern::Gpt2;
        have_pattern = true;
      }
    } else if (type == "Split") {
      const std::string regex = step.contains("pattern") ? step["pattern"].value("Regex", std::string()) : "";
      if (step.value("behavior", std::string()) != "Isolated" || step.value("invert", false))
        throw fail("only Split pre-tokenizers with behavior Isolated are supported");
      if (!split_pattern_from_regex(regex, &tok->pattern_))
        throw fail("pre-tokenizer pattern is not one we implement (Llama 3 or GPT-2): " + regex);
      have_pattern = true;
    } else {
      throw fail("pre-tokenizer '" + type + "' is not supported");
    }
  }
  if (!byte_level || !have_pattern) throw fail("not a byte-level BPE tokenizer (no ByteLevel pre-tokenizer with a split pattern)");

  tok->ignore_merges_ = model.value("ignore_merges", false);
  if (!model.contains("vocab") || !model["vocab"].is_object()) throw fail("model has no 'vocab' object");
  std::string bytes;
  for (const auto& [token, id_json] : model["vocab"].items()) {
    const int64_t id = id_json.get<int64_t>();
    if (id < 0) throw fail("negative id for token '" + token + "'");
    if (!byte_level_to_bytes(token, &bytes)) throw fail("vocabulary entry '" + token + "' is not byte-level");
    tok->vocab_[bytes] = id;
    if (static_cast<int64_t>(tok->id_bytes_.size()) <= id) tok->id_bytes_.resize(id + 1);
    tok->id_bytes_[id] = bytes;
  }
  const json merges = model.value("merges", json::array());
  int64_t rank = 0;
  for (const auto& m : merges) {
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos) throw fail("merge '" + s + "' is not two tokens separated by a space");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      throw fail("merge entry " + std::to_string(rank) + " is neither \"a b\" nor [a, b]");
    }
    std::string lb, rb;
    if (!byte_level_to_bytes(left, &lb) || !byte_level_to_bytes(right, &rb))
      throw fail("merge '" + left + " " + right + "' is not byte-level");
    tok->merge_ranks_.emplace(lb + '\0' + rb, rank++);
  }
  tok->set_added_tokens(added_tokens_of(root, source));
  tok->finish(source, std::filesystem::path(source).parent_path().string(), options);
  return tok;
}

std::shared_ptr<BpeTokenizer> BpeTokenizer::from_tiktoken(const std::string& text, const std::string& source,
                                                          const BpeOptions& options) {
  std::shared_ptr<BpeTokenizer> tok(new BpeTokenizer());
  tok->pattern_ = SplitPattern::Llama3;
  tok->merges_by_vocab_rank_ = true;
  tok->ignore_merges_ = true;
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
    if (!ok || rank < 0)
      throw std::runtime_error(source + ":" + std::to_string(line_no) +
                               ": expected '<base64 token> <rank>' (a tiktoken BPE file)");
    tok->vocab_[bytes] = rank;
    if (static_cast<int64_t>(tok->id_bytes_.size()) <= rank) tok->id_bytes_.resize(rank + 1);
    tok->id_bytes_[rank] = bytes;
  }
  if (tok->vocab_.empty()) throw std::runtime_error(source + ": empty tiktoken file");
  tok->set_added_tokens(llama3_special_tokens());
  tok->finish(source, std::filesystem::path(source).parent_path().string(), options);
  return tok;
}

void BpeTokenizer::set_added_tokens(std::vector<AddedToken> tokens) {
  // Longest first, so that a token that is a prefix of another never wins.
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  added_ = std::move(tokens);
  added_by_id_.clear();
  for (size_t i = 0; i < added_.size(); ++i) added_by_id_[added_[i].id] = i;
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
    json root;
    try {
      root = json::parse(read_file(options.special_tokens_path));
    } catch (const json::parse_error& e) {
      throw std::runtime_error(options.special_tokens_path + ": not valid JSON (" + e.what() + ")");
    }
    set_added_tokens(added_tokens_of(root, options.special_tokens_path));
  }
  int64_t max_id = static_cast<int64_t>(id_bytes_.size()) - 1;
  for (const auto& t : added_) max_id = std::max(max_id, t.id);
  vocab_size_ = max_id + 1;

  json config;
  const auto config_path = std::filesystem::path(sibling_dir) / "tokenizer_config.json";
  if (!sibling_dir.empty() && std::filesystem::exists(config_path)) {
    try {
      config = json::parse(read_file(config_path.string()));
    } catch (const std::exception&) {
      config = json();  // a broken config beside the tokenizer only loses the token names
    }
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
  for (const auto& t : added_)
    if (t.content == token) return t.id;
  const auto it = vocab_.find(token);
  if (it != vocab_.end()) return it->second;
  return std::nullopt;
}

std::string BpeTokenizer::id_to_bytes(int64_t id) const {
  const auto a = added_by_id_.find(id);
  if (a != added_by_id_.end()) return added_[a->second].content;
  if (id < 0 || id >= static_cast<int64_t>(id_bytes_.size()))
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(vocab_size_));
  return id_bytes_[id];
}

int64_t BpeTokenizer::pair_rank(const std::string& left, const std::string& right) const {
  if (merges_by_vocab_rank_) {
    const auto it = vocab_.find(left + right);
    return it == vocab_.end() ? -1 : it->second;
  }
  const auto it = merge_ranks_.find(left + '\0' + right);
  return it == merge_ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const auto whole = vocab_.find(piece);
    if (whole != vocab_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  std::vector<std::string> parts;
  parts.reserve(piece.size());
  for (const char c : piece) parts.emplace_back(1, c);
  while (parts.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max();
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const int64_t r = pair_rank(parts[i], parts[i + 1]);
      if (r >= 0 && r < best) {
        best = r;
        at = i;
      }
    }
    if (best == std::numeric_limits<int64_t>::max()) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  for (const auto& p : parts) {
    const auto it = vocab_.find(p);
    if (it == vocab_.end()) {
      std::string hex;
      for (const unsigned char c : p) hex += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
      throw std::runtime_error("byte sequence " + hex + " has no token (incomplete byte-level vocabulary)");
    }
    out.push_back(it->second);
  }
}

std::vector<int64_t> BpeTokenizer::encode_ordinary(const std::string& text) const {
  std::vector<int64_t> out;
  for (const auto& piece : pre_tokenize(text, pattern_)) bpe(piece, out);
  return out;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool add_bos, bool add_eos) const {
  std::vector<int64_t> out;
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  size_t start = 0;
  if (parse_special_ && !added_.empty()) {
    for (size_t i = 0; i < text.size();) {
      const AddedToken* hit = nullptr;
      for (const auto& t : added_) {
        if (!t.content.empty() && text.compare(i, t.content.size(), t.content) == 0) {
          hit = &t;
          break;
        }
      }
      if (!hit) {
        ++i;
        continue;
      }
      const auto before = encode_ordinary(text.substr(start, i - start));
      out.insert(out.end(), before.begin(), before.end());
      out.push_back(hit->id);
      i += hit->content.size();
      start = i;
    }
  }
  const auto rest = encode_ordinary(text.substr(start));
  out.insert(out.end(), rest.begin(), rest.end());
  if (add_eos && eos_id_ >= 0) out.push_back(eos_id_);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (const auto id : ids) {
    const auto a = added_by_id_.find(id);
    if (a != added_by_id_.end()) {
      if (!added_[a->second].special) out += added_[a->second].content;
      continue;
    }
    out += id_to_bytes(id);
  }
  return out;
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
    if (max_seq_len() && static_cast<int64_t>(out.tokens.size()) >= *max_seq_len()) break;
  }
  if (add_end_tokens) {
    out.tokens.push_back(eos_id_);
    out.mask.push_back(true);
  }
  if (const auto n = max_seq_len()) {
    out.tokens = truncate<int64_t>(out.tokens, *n, add_end_tokens ? std::optional<int64_t>(eos_id_) : std::nullopt,
                                   truncation_type());
    out.mask = truncate<bool>(out.mask, *n, add_end_tokens ? std::optional<bool>(true) : std::nullopt,
                              truncation_type());
  }
  return out;
}

}  // namespace tb::data
