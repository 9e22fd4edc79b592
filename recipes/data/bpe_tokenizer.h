// The tokenizer of the BPE model families (Llama 3, Qwen2/2.5/3, Gemma 2/3, Phi-3/4, SmolLM2, Mistral, the
// GPT-2 family): a Hugging Face `tokenizer.json` run exactly as the `tokenizers` library runs it (the
// pipeline of text/: normalizer, pre-tokenizer, BPE, post-processor, decoder, added tokens), a tiktoken
// `tokenizer.model` (base64 token + rank a line, Llama 3's original format) or torchtune's `vocab.json`
// + `merges.txt` (Qwen2, Phi-4).
//
// encode(text, add_bos, add_eos) is tokenizers' encode(text, add_special_tokens=False) plus our BOS/EOS
// flags; encode_with_offsets() is tokenizers' encode with its post-processor's special tokens when asked,
// offsets as byte ranges of the text given. tokenize_messages follows torchtune's Llama3Tokenizer when the
// Llama 3 header tokens exist (<|begin_of_text|> <|start_header_id|>role<|end_header_id|>\n\n text
// <|eot_id|> ... <|end_of_text|>) and tokenize_messages_no_special_tokens otherwise.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/tokenizer.h"
#include "text/added_token.h"

namespace tb::text {
class TokenizerPipeline;
}

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

// torchtune's vocab.json + merges.txt tokenizers (Qwen2, Phi-4): the byte-level pipeline Hugging Face
// writes for them (split regex, then ByteLevel; NFC first for Qwen2), with special tokens at given ids.
struct VocabMergesOptions {
  std::string split_regex;                        // the pre-tokenizer's pattern (Oniguruma, as in tokenizer.json)
  bool nfc = false;                               // NFC normalizer (Qwen2)
  std::map<std::string, int64_t> special_tokens;  // content -> id
  BpeOptions options;
};

using AddedToken = text::AddedToken;

class BpeTokenizer : public Tokenizer {
 public:
  struct Encoding {
    std::vector<int64_t> ids;
    std::vector<std::pair<size_t, size_t>> offsets;  // byte ranges of the text encoded
  };

  // `*.json` is read as tokenizer.json, anything else as a tiktoken file. Throws std::runtime_error
  // naming the file and the problem (for tokenizer.json: the JSON path and value of what is refused).
  static std::shared_ptr<BpeTokenizer> from_file(const std::string& path, const BpeOptions& options = {});
  static std::shared_ptr<BpeTokenizer> from_hf_json(const std::string& json_text, const std::string& source_name,
                                                    const BpeOptions& options = {});
  static std::shared_ptr<BpeTokenizer> from_tiktoken(const std::string& text, const std::string& source_name,
                                                     const BpeOptions& options = {});
  static std::shared_ptr<BpeTokenizer> from_vocab_merges(const std::string& vocab_json_path,
                                                         const std::string& merges_path, const VocabMergesOptions& o);

  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override;
  Encoding encode_with_offsets(const std::string& text, bool add_special_tokens = false) const;
  std::string decode(const std::vector<int64_t>& ids) const override;  // special tokens are skipped
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const;
  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t vocab_size() const override { return vocab_size_; }
  std::vector<int64_t> stop_tokens() const override;
  TokenizedMessages tokenize_messages(const std::vector<Message>& messages, bool add_end_tokens = true) const override;

  std::string id_to_token(int64_t id) const override { return id_to_bytes(id); }
  // Id of a vocabulary entry (raw bytes for byte-level vocabularies, else the entry as written) or an
  // added token's content.
  std::optional<int64_t> token_to_id(const std::string& token) const;
  // Raw bytes of an id (byte-level vocabularies; else the entry as written; an added token's content).
  std::string id_to_bytes(int64_t id) const;
  std::vector<AddedToken> added_tokens() const;  // by id, with their flags
  bool is_special(int64_t id) const;             // an added token marked special
  bool has_llama3_chat_tokens() const { return llama3_.has_value(); }
  const text::TokenizerPipeline& pipeline() const { return *pipeline_; }

 private:
  BpeTokenizer() = default;
  void finish(const std::string& source_name, const std::string& sibling_dir, const BpeOptions& options);
  void set_added_tokens(std::vector<AddedToken> tokens);
  int64_t require_id(const std::string& token, const std::string& what) const;

  struct Llama3Ids {
    int64_t start_header, end_header, eot, eom, python_tag;
  };

  std::shared_ptr<text::TokenizerPipeline> pipeline_;
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
