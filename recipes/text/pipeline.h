// A tokenizer.json pipeline as Hugging Face tokenizers runs it: added tokens cut out, normalizer,
// pre-tokenizer, BPE model, post-processor; decode through the decoder. Offsets are byte offsets into the
// text given to encode() (text that is not valid UTF-8 is read as from_utf8_lossy would make it, its
// offsets pointing back into the bytes given).
//
// Pipelines of the byte-level shape (no normalizer or NFC; pre-tokenizers that only split, then ByteLevel;
// no offset trimming; added tokens matched on the raw text) run a fast path that tokenizes raw bytes and
// computes the same ids and offsets without building NormalizedStrings; anything else, and any text whose
// NFC form differs from it, takes the general path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_vocabulary.h"
#include "text/bpe_model.h"
#include "text/decoders.h"
#include "text/normalizers.h"
#include "text/post_processors.h"
#include "text/pre_tokenizers.h"

namespace tb::text {

class TokenizerPipeline {
 public:
  TokenizerPipeline(std::shared_ptr<const Normalizer> normalizer, std::shared_ptr<const PreTokenizer> pre_tokenizer,
                    BpeModel model, std::shared_ptr<const PostProcessor> post_processor,
                    std::shared_ptr<const Decoder> decoder);

  // Setting up (before encoding): the added tokens, then prepare().
  AddedVocabulary& added_vocabulary() { return added_; }
  const AddedVocabulary& added_vocabulary() const { return added_; }
  const Normalizer* normalizer() const { return normalizer_.get(); }
  const PreTokenizer* pre_tokenizer() const { return pre_tokenizer_.get(); }
  void set_encode_special_tokens(bool v) { added_.set_encode_special_tokens(v); }
  // Decides whether the fast path applies; call after the added tokens are set.
  void prepare();

  // Token strings are filled by the general path only (empty when the fast path ran).
  Encoding encode(std::string_view text, bool add_special_tokens) const;
  Encoding encode_general(std::string_view text, bool add_special_tokens) const;  // never the fast path
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const;

  const BpeModel& model() const { return model_; }
  // An added token's content or the model's token string.
  std::optional<std::string> id_to_token(int64_t id) const;
  std::optional<uint32_t> token_to_id(const std::string& token) const;
  // Whether the vocabulary is spelled in the byte-level alphabet (a ByteLevel pre-tokenizer or decoder).
  bool byte_level() const { return byte_level_; }
  bool fast_path() const { return fast_; }

 private:
  struct Splitter {  // one splitting step of the fast path
    const Pattern* pattern = nullptr;
    const Regex* regex = nullptr;
    bool digits = false;
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
  };
  bool encode_fast(std::string_view text, bool add_special_tokens, Encoding& out) const;
  void split_ranges(std::string_view text, const Splitter& s, std::vector<ByteRange>& ranges) const;

  std::shared_ptr<const Normalizer> normalizer_;
  std::shared_ptr<const PreTokenizer> pre_tokenizer_;
  BpeModel model_;
  std::shared_ptr<const PostProcessor> post_processor_;
  std::shared_ptr<const Decoder> decoder_;
  AddedVocabulary added_;
  bool byte_level_ = false;
  bool fast_ = false;
  bool fast_nfc_ = false;
  std::vector<Splitter> splitters_;
};

}  // namespace tb::text
