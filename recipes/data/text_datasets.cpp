#include "data/text_datasets.h"

#include <numeric>
#include <stdexcept>

#include "data/tokenizer.h"

namespace tb::data {

std::string usable_prefix(std::string text, const Tokenizer& tokenizer) {
  const auto n = tokenizer.max_seq_len();
  if (!n || tokenizer.truncation_type() != "right" || *n <= 0) return text;
  const size_t limit = size_t(*n) * kMaxBytesPerToken;
  if (text.size() <= limit) return text;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  text.resize(cut);
  return text;
}

std::shared_ptr<InMemoryDataset> make_text_completion_dataset(RowReader& rows, const std::string& column,
                                                              bool add_eos, const Tokenizer& tokenizer,
                                                              const DatasetOrigin& origin) {
  SampleStore samples;
  DatasetStats stats;
  for_each_row(rows, origin, stats, [&](const Row& row) {
    std::vector<int64_t> tokens = tokenizer.encode(usable_prefix(string_column(row, column), tokenizer), true, add_eos);
    if (const auto n = tokenizer.max_seq_len(); n && static_cast<int64_t>(tokens.size()) > *n - 1) {
      tokens = truncate<int64_t>(tokens, *n - 1);
      ++stats.truncated;
    }
    Sample s;
    s.labels = shifted_labels(tokens);
    s.tokens = std::move(tokens);
    stats.count_sample(s);
    samples.add(s);
  });
  samples.shrink_to_fit();
  const std::string description = origin.component + ": " + std::to_string(samples.size()) + " documents from " +
                                  origin.files;
  return std::make_shared<InMemoryDataset>(std::move(samples), description, std::move(stats));
}

namespace {
uint64_t splitmix64(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

SyntheticDataset::SyntheticDataset(int64_t seq_len, int64_t num_samples, uint64_t seed, int64_t vocab_size)
    : seq_len_(seq_len), num_samples_(num_samples), vocab_size_(vocab_size), seed_(seed) {
  if (seq_len < 1) throw std::invalid_argument("synthetic: seq_len must be at least 1, got " + std::to_string(seq_len));
  if (num_samples < 1)
    throw std::invalid_argument("synthetic: num_samples must be at least 1, got " + std::to_string(num_samples));
  if (vocab_size < 1)
    throw std::invalid_argument("synthetic: the vocabulary size must be at least 1, got " + std::to_string(vocab_size));
}

Sample SyntheticDataset::get(size_t index) const {
  if (index >= size()) throw std::out_of_range("synthetic sample " + std::to_string(index));
  uint64_t state = seed_ ^ (0xD1B54A32D192ED03ull * (static_cast<uint64_t>(index) + 1));
  const auto vocab = static_cast<uint64_t>(vocab_size_);
  // Rejection sampling keeps the draw exactly uniform.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % vocab;
  Sample s;
  s.tokens.resize(static_cast<size_t>(seq_len_));
  for (auto& t : s.tokens) {
    uint64_t r;
    do r = splitmix64(state);
    while (r >= limit);
    t = static_cast<int64_t>(r % vocab);
  }
  s.labels = shifted_labels(s.tokens);
  return s;
}

std::string SyntheticDataset::description() const {
  return "synthetic: " + std::to_string(num_samples_) + " samples of " + std::to_string(seq_len_) +
         " random tokens below " + std::to_string(vocab_size_) + " (seed " + std::to_string(seed_) + ")";
}

namespace {

struct Pack {
  std::vector<int64_t> tokens, labels, input_pos, seq_lens;
};

Sample finish_pack(Pack pack, int64_t max_seq_len, int64_t pad_id) {
  const auto n = static_cast<int64_t>(pack.tokens.size());
  const int64_t padding = max_seq_len - n;
  Sample s;
  s.tokens = std::move(pack.tokens);
  s.labels = std::move(pack.labels);
  s.input_pos = std::move(pack.input_pos);
  s.seq_lens = std::move(pack.seq_lens);
  if (padding > 0) {
    s.tokens.resize(static_cast<size_t>(max_seq_len), pad_id);
    s.labels.resize(static_cast<size_t>(max_seq_len), kIgnoreIndex);
    // Padding positions continue from the last one, clamped below max_seq_len (as torchtune).
    const int64_t last = s.input_pos.empty() ? -1 : s.input_pos.back();
    for (int64_t k = 1; k <= padding; ++k) s.input_pos.push_back(std::min(last + k, max_seq_len - 1));
    s.seq_lens.push_back(padding);
  }
  return s;
}

}  // namespace

std::shared_ptr<InMemoryDataset> pack_dataset(const Dataset& dataset, int64_t max_seq_len, int64_t pad_id,
                                              bool split_across_pack, std::optional<size_t> max_packs) {
  if (max_seq_len < 1) throw std::invalid_argument("packing needs a max_seq_len of at least 1 (set tokenizer.max_seq_len)");
  SampleStore packs;
  auto full = [&] { return max_packs && packs.size() >= *max_packs; };
  const auto limit = static_cast<size_t>(max_seq_len);
  Pack current;
  size_t previous_boundary = 0;
  for (size_t i = 0; i < dataset.size() && !full(); ++i) {
    const Sample sample = dataset.get(i);
    const size_t len = sample.tokens.size();
    if (len > limit && !split_across_pack)
      throw std::invalid_argument("sample " + std::to_string(i) + " is longer than max_seq_len (" + std::to_string(len) +
                                  " > " + std::to_string(max_seq_len) + "); set split_across_pack or raise max_seq_len");
    current.tokens.insert(current.tokens.end(), sample.tokens.begin(), sample.tokens.end());
    current.labels.insert(current.labels.end(), sample.labels.begin(), sample.labels.end());
    for (size_t k = 0; k < len; ++k) current.input_pos.push_back(static_cast<int64_t>(k % limit));
    current.seq_lens.push_back(static_cast<int64_t>(len));
    while (current.tokens.size() > limit && !full()) {
      // Cut at max_seq_len (split) or before the sample that overflowed (no split).
      const size_t boundary = split_across_pack ? limit : previous_boundary;
      Pack head;
      head.tokens.assign(current.tokens.begin(), current.tokens.begin() + boundary);
      head.labels.assign(current.labels.begin(), current.labels.begin() + boundary);
      head.input_pos.assign(current.input_pos.begin(), current.input_pos.begin() + boundary);
      head.seq_lens.assign(current.seq_lens.begin(), current.seq_lens.end() - 1);
      if (split_across_pack) {
        const int64_t used = std::accumulate(head.seq_lens.begin(), head.seq_lens.end(), int64_t{0});
        if (max_seq_len - used > 0) head.seq_lens.push_back(max_seq_len - used);
      }
      const int64_t rest_len = static_cast<int64_t>(current.tokens.size() - boundary);
      Pack rest;
      rest.tokens.assign(current.tokens.begin() + boundary, current.tokens.end());
      rest.labels.assign(current.labels.begin() + boundary, current.labels.end());
      rest.input_pos.assign(current.input_pos.begin() + boundary, current.input_pos.end());
      rest.seq_lens = {split_across_pack ? rest_len : current.seq_lens.back()};
      packs.add(finish_pack(std::move(head), max_seq_len, pad_id));
      current = std::move(rest);
    }
    previous_boundary = current.tokens.size();
  }
  if (!current.tokens.empty() && !full()) packs.add(finish_pack(std::move(current), max_seq_len, pad_id));
  std::string description = "packed into " + std::to_string(packs.size()) + " blocks of " +
                            std::to_string(max_seq_len) + " tokens: " + dataset.description();
  // The rows' counts stay those of the samples before packing.
  return std::make_shared<InMemoryDataset>(std::move(packs), std::move(description), dataset.stats());
}

}  // namespace tb::data
