// Byte-level BPE (Llama 3, GPT-2 family) from a Hugging Face `tokenizer.json` or a tiktoken
// `tokenizer.model` (base64 token + rank a line, Llama 3's original format).
//
// Encoding: added tokens are cut out of the text first (unless parse_special_tokens is false), the
// rest is split by the pre-tokenizer pattern (data/pretokenize.h), and each piece's UTF-8 bytes are
// merged by rank: the adjacent pair of lowest rank first, leftmost on ties. Pieces found whole in the
// vocabulary are taken as they are when the file says `ignore_merges` (Llama 3) and always for tiktoken.
//
// tokenize_messages follows torchtune's Llama3Tokenizer when the Llama 3 header tokens exist
// (<|begin_of_text|> <|start_header_id|>role<|end_header_id|>\n\n text <|eot_id|> ... <|end_of_text|>)
// and tokenize_messages_no_special_tokens otherwise.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/pretokenize.h"
#include "data/tokenizer.h"

namespace tb::data {

struct BpeOptions {
  std::optional<int64_t> max_seq_len;
  std::optional<PromptTemplate> prompt_template;
  std::string truncation_type = "right";
  // true: "<|eot_id|>" in the text becomes that token (Hugging Face tokenizers); false: it is plain
  // text (torchtune's tiktoken-based Llama 3 tokenizer).
  bool parse_special_tokens = true;
  // A tokenizer.json whose added_tokens replace the special tokens (torchtune's special_tokens_path).
  std::string special_tokens_path;
  // Names of the BOS/EOS/PAD tokens; empty: tokenizer_config.json next to the file, else the first
  // of <|begin_of_text|>/<s>, <|end_of_text|>/</s>/<|endoftext|>, <|finetune_right_pad_id|>/<pad>
  // that exists; PAD falls back to EOS.
  std::string bos_token, eos_token, pad_token;
  bool require_llama3_tokens = false;  // llama3_tokenizer: refuse files without the header tokens
};

struct AddedToken {
  int64_t id;
  std::string content;
  bool special;
};

class BpeTokenizer : public Tokenizer {
 public:
  // `*.json` is read as tokenizer.json, anything else as a tiktoken file. Throws std::runtime_error
  // naming the file and the problem.
  static std::shared_ptr<BpeTokenizer> from_file(const std::string& path, const BpeOptions& options = {});
  static std::shared_ptr<BpeTokenizer> from_hf_json(const std::string& json_text, const std::string& source_name,
                                                    const BpeOptions& options = {});
  static std::shared_ptr<BpeTokenizer> from_tiktoken(const std::string& text, const std::string& source_name,
                                                     const BpeOptions& options = {});

  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;  // special added tokens are skipped
  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t vocab_size() const override { return vocab_size_; }
  std::vector<int64_t> stop_tokens() const override;
  TokenizedMessages tokenize_messages(const std::vector<Message>& messages,
                                      bool add_end_tokens = true) const override;

  std::string id_to_token(int64_t id) const override { return id_to_bytes(id); }
  // Id of a vocabulary entry (raw bytes) or an added token's content.
  std::optional<int64_t> token_to_id(const std::string& token) const;
  // Raw bytes of an id (an added token's content for added tokens).
  std::string id_to_bytes(int64_t id) const;
  bool has_llama3_chat_tokens() const { return llama3_.has_value(); }

 private:
  BpeTokenizer() = default;
  void finish(const std::string& source_name, const std::string& sibling_dir, const BpeOptions& options);
  void set_added_tokens(std::vector<AddedToken> tokens);
  std::vector<int64_t> encode_ordinary(const std::string& text) const;  // no added tokens
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;
  int64_t pair_rank(const std::string& left, const std::string& right) const;
  int64_t require_id(const std::string& token, const std::string& what) const;

  struct Llama3Ids {
    int64_t start_header, end_header, eot, eom, python_tag;
  };

  SplitPattern pattern_ = SplitPattern::Llama3;
  bool merges_by_vocab_rank_ = false;  // tiktoken: a pair's rank is the rank of its concatenation
  bool ignore_merges_ = false;
  std::unordered_map<std::string, int64_t> vocab_;        // raw bytes -> id
  std::unordered_map<std::string, int64_t> merge_ranks_;  // left + '\0' + right -> rank
  std::vector<std::string> id_bytes_;                     // id -> raw bytes ("" when unused)
  std::vector<AddedToken> added_;                         // longest content first
  std::unordered_map<int64_t, size_t> added_by_id_;
  bool parse_special_ = true;
  std::optional<PromptTemplate> prompt_template_;
  std::optional<Llama3Ids> llama3_;
  int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = 0, vocab_size_ = 0;
};

// GPT-2's reversible map from bytes to printable code points (the alphabet of byte-level vocabularies).
char32_t byte_to_unicode(unsigned char byte);
// The inverse; -1 when the code point is not in the map.
int unicode_to_byte(char32_t cp);

}  // namespace tb::data
