// The BPE model of tokenizer.json as Hugging Face tokenizers computes it: a word's characters looked up
// in the vocabulary (continuing_subword_prefix / end_of_word_suffix added, missing ones as <0xXX> byte
// tokens with byte_fallback, else the unk token, consecutive unknowns fused with fuse_unk, else dropped),
// then merged by rank: a min-heap of (rank, position) so the lowest rank goes first and, among equal
// ranks, the leftmost; entries whose pair has changed since they were queued are skipped. With
// ignore_merges a word found whole in the vocabulary is one token. Merged words are cached per thread.
//
// A byte-level vocabulary (every byte's character present, no prefix/suffix) can also tokenize raw bytes
// directly (tokenize_bytes), which is what the pipeline's fast path uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/flat_map.h"
#include "text/pre_tokenized_string.h"

namespace tb::text {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::optional<std::string> continuing_subword_prefix;
  std::optional<std::string> end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

// A token found in raw bytes: its id and how many bytes it covers.
struct IdSpan {
  uint32_t id;
  uint32_t length;
};

class BpeModel {
 public:
  // `merges` in rank order. Throws std::invalid_argument("merges[i]: ...") when a merge names a token
  // that is not in the vocabulary or makes one that is not.
  BpeModel(const std::vector<std::pair<std::string, uint32_t>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);
  // tiktoken's BPE: a pair's rank is the rank (= id) of the token it makes, every split of a token into two
  // tokens is a merge; ignore_merges is on.
  static BpeModel from_ranks(const std::vector<std::pair<std::string, uint32_t>>& vocab);
  ~BpeModel();
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) = delete;
  BpeModel(const BpeModel&) = delete;

  const BpeOptions& options() const { return options_; }
  std::optional<uint32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(uint32_t id) const;
  size_t vocab_size() const { return vocab_.size(); }  // entries, as tokenizers counts them
  int64_t max_id() const { return static_cast<int64_t>(id_to_token_.size()) - 1; }
  size_t merge_count() const { return merges_.size(); }
  // The merges in rank order, as tokenizer.json lists them (a model built from tiktoken ranks has one
  // merge per split of each token instead, which this lists too, ordered by the token's rank).
  std::vector<std::pair<std::string, std::string>> merges() const;
  bool from_ranks() const { return from_ranks_; }

  // The tokens of one word (a split's normalized text), appended to `out`; offsets are bytes of `word`.
  void tokenize(std::string_view word, std::vector<Token>& out) const;

  // Whether raw-bytes tokenization is available: every byte's byte-level character is a token and no
  // prefix/suffix is configured. Built by enable_byte_level().
  bool enable_byte_level();
  bool byte_level() const { return byte_level_; }
  // The tokens of raw bytes, as tokenize() of their byte-level spelling gives them (ids and byte spans).
  void tokenize_bytes(std::string_view bytes, std::vector<IdSpan>& out) const;

 private:
  BpeModel() = default;
  struct Symbol {
    uint32_t c;
    int32_t prev, next;
    uint32_t len;
  };
  void add_vocab(const std::vector<std::pair<std::string, uint32_t>>& vocab);
  void merge_symbols(std::vector<Symbol>& symbols) const;
  void symbols_of_word(std::string_view word, std::vector<Symbol>& symbols) const;
  void merge_bytes(std::string_view bytes, std::vector<IdSpan>& out) const;

  BpeOptions options_;
  StringIdMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  PairMap merges_;
  std::optional<uint32_t> unk_id_;
  bool byte_level_ = false;
  bool from_ranks_ = false;
  int64_t byte_symbol_[256] = {};
  StringIdMap raw_vocab_;  // raw bytes -> id (byte-level vocabularies, for ignore_merges)
  uint64_t cache_id_ = 0;
};

}  // namespace tb::text
