// Pre-training style datasets: text completion over local documents, seeded synthetic tokens, and
// packing of any dataset into fixed-length blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/json_rows.h"
#include "data/row_sources.h"

namespace tb::data {

class Tokenizer;

// More bytes than any real tokenizer puts in one token on average (about 4 for English; long runs of
// spaces in code tokenizers reach 16 or so).
inline constexpr size_t kMaxBytesPerToken = 64;

// The part of a document tokenizing can use when the tokenizer truncates on the right to max_seq_len:
// the first max_seq_len * kMaxBytesPerToken bytes (cut at a UTF-8 character), the whole text otherwise.
// A 100 MB line took 10.7 GB to tokenize for 128 tokens kept.
std::string usable_prefix(std::string text, const Tokenizer& tokenizer);

// torchtune's TextCompletionDataset: each document is BOS + text (+ EOS when add_eos), truncated to
// max_seq_len - 1 tokens when the tokenizer has a max_seq_len (torchtune's rule; EOS is not forced),
// every position trained. Bad rows as make_sft_dataset.
std::shared_ptr<InMemoryDataset> make_text_completion_dataset(RowReader& rows, const std::string& column,
                                                              bool add_eos, const Tokenizer& tokenizer,
                                                              const DatasetOrigin& origin);

// `num_samples` samples of `seq_len` token ids drawn uniformly from [0, vocab_size), every position
// trained. Sample i depends only on (seed, i): generated on demand, the same in any order and run.
class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(int64_t seq_len, int64_t num_samples, uint64_t seed, int64_t vocab_size);
  size_t size() const override { return static_cast<size_t>(num_samples_); }
  Sample get(size_t index) const override;
  std::string description() const override;
  int64_t vocab_size() const { return vocab_size_; }

 private:
  int64_t seq_len_, num_samples_, vocab_size_;
  uint64_t seed_;
};

// torchtune's PackedDataset: samples are concatenated greedily into packs of max_seq_len tokens.
// A sample that does not fit starts the next pack, or (split_across_pack) is cut at the boundary.
// Packs are padded to max_seq_len (pad_id for tokens, -100 for labels); input_pos restarts at 0 for
// each sample and seq_lens lists the sample lengths (the padding as a last entry).
// Across samples: labels are shifted per sample, so the last position of each sample has label -100
// and no position is trained to predict the next sample's first token. Attention is whatever the
// model does with the pack: with plain causal attention a sample can see the samples before it in
// its pack (input_pos and seq_lens allow a block-causal mask).
std::shared_ptr<InMemoryDataset> pack_dataset(const Dataset& dataset, int64_t max_seq_len, int64_t pad_id,
                                              bool split_across_pack, std::optional<size_t> max_packs = std::nullopt);

}  // namespace tb::data
