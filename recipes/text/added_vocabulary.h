// Added tokens (tokenizer.json's "added_tokens") and how Hugging Face tokenizers cuts them out of a text
// before the pre-tokenizer runs: first the tokens with normalized=false, found in the raw text; then, in
// what is left once normalized, the tokens with normalized=true (found by their normalized content).
// Matching is leftmost-longest, without overlaps; single_word, lstrip and rstrip follow its AddedVocabulary
// (single_word: no word character touching either end; lstrip/rstrip: the match takes the whitespace to
// its left/right).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/added_token.h"
#include "text/normalizers.h"
#include "text/pre_tokenized_string.h"

namespace tb::text {

class BpeModel;

class AddedVocabulary {
 public:
  // tokenizers' add_tokens when a file is loaded: a token whose content is already an id (model vocabulary
  // or added before) takes that id, a new one the next free id after the model's vocabulary (whatever id
  // the file wrote). `normalizer` gives the normalized=true tokens their normalized form.
  void add_tokens(const std::vector<AddedToken>& tokens, const BpeModel& model, const Normalizer* normalizer);
  // Tokens with their ids as given (torchtune's special tokens, a tiktoken file's), replacing all others.
  void set_tokens(const std::vector<AddedToken>& tokens, const Normalizer* normalizer);

  bool empty() const { return by_id_.empty(); }
  std::vector<AddedToken> tokens() const;  // by id
  std::optional<uint32_t> token_to_id(const std::string& content) const;
  // The content decode() uses for an id: the normalized content for normalized tokens the normalizer
  // changes (tokenizers' simple_id_to_token); nullptr when the id is not an added token.
  const std::string* decoded_content(uint32_t id) const;
  const AddedToken* token_of(uint32_t id) const;
  bool is_special_content(const std::string& content) const { return special_contents_.count(content) > 0; }
  // true: special tokens are left in the text as text (tokenizers' encode_special_tokens).
  void set_encode_special_tokens(bool v) { encode_special_tokens_ = v; }
  bool encode_special_tokens() const { return encode_special_tokens_; }
  bool has_normalized_tokens() const { return !normalized_trie_.empty(); }

  // The whole text as splits: added tokens (tokenized) and the text between them, normalized.
  PreTokenizedString extract_and_normalize(const Normalizer* normalizer, const std::string& text) const;

  // Leftmost-longest matches of the raw (normalized=false) tokens in `text`, after single_word, lstrip and
  // rstrip: (id or -1 for text between, start, end), covering the text.
  struct Piece {
    int64_t id;
    size_t start, end;
  };
  void split_raw(std::string_view text, std::vector<Piece>& out) const { find_matches(text, raw_trie_, out); }

 private:
  class Trie {
   public:
    void clear() {
      nodes_.assign(1, Node{});
      first_bytes_.fill(false);
    }
    bool empty() const { return nodes_.size() <= 1; }
    void insert(std::string_view pattern, uint32_t id);
    // The longest pattern starting at `at`: its length and id; 0 when none.
    size_t longest_at(std::string_view text, size_t at, uint32_t* id) const;
    bool may_start(unsigned char b) const { return first_bytes_[b]; }

   private:
    struct Node {
      std::vector<std::pair<unsigned char, uint32_t>> children;
      int64_t id = -1;
    };
    std::vector<Node> nodes_{Node{}};
    std::array<bool, 256> first_bytes_{};
  };

  // Records `token` under `id` (its normalized form too, when it is matched after normalization).
  void store(const AddedToken& token, uint32_t id, const Normalizer* normalizer);
  void refresh(const Normalizer* normalizer);
  void find_matches(std::string_view text, const Trie& trie, std::vector<Piece>& out) const;
  void split_with_trie(NormalizedString&& n, const Trie& trie, bool unnormalized, std::vector<Split>& out) const;

  std::unordered_map<std::string, uint32_t> by_content_;
  std::unordered_map<uint32_t, AddedToken> by_id_;
  std::unordered_set<std::string> special_contents_;
  std::unordered_map<uint32_t, std::string> normalized_content_;
  Trie raw_trie_, normalized_trie_;
  bool encode_special_tokens_ = false;
};

}  // namespace tb::text
