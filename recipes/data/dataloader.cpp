#include "data/dataloader.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

namespace tb::data {

int64_t Batch::num_label_tokens() const {
  return std::count_if(labels.begin(), labels.end(), [](int64_t l) { return l != kIgnoreIndex; });
}

Batch collate(const std::vector<Sample>& samples, int64_t pad_id, int64_t pad_to_multiple_of, int64_t ignore_index) {
  Batch b;
  b.batch_size = static_cast<int64_t>(samples.size());
  if (samples.empty()) return b;
  size_t longest = 0;
  bool packed = true;
  for (const auto& s : samples) {
    longest = std::max({longest, s.tokens.size(), s.labels.size()});
    packed = packed && !s.input_pos.empty();
  }
  const int64_t multiple = std::max<int64_t>(1, pad_to_multiple_of);
  b.seq_len = (static_cast<int64_t>(longest) + multiple - 1) / multiple * multiple;
  const auto T = static_cast<size_t>(b.seq_len);
  b.tokens.assign(samples.size() * T, pad_id);
  b.labels.assign(samples.size() * T, ignore_index);
  if (packed) b.input_pos.assign(samples.size() * T, 0);
  for (size_t r = 0; r < samples.size(); ++r) {
    const auto& s = samples[r];
    std::copy(s.tokens.begin(), s.tokens.end(), b.tokens.begin() + r * T);
    std::copy(s.labels.begin(), s.labels.end(), b.labels.begin() + r * T);
    if (packed) std::copy(s.input_pos.begin(), s.input_pos.end(), b.input_pos.begin() + r * T);
  }
  return b;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (!dataset_) throw std::invalid_argument("DataLoader: no dataset");
  if (options_.batch_size < 1)
    throw std::invalid_argument("batch_size must be at least 1, got " + std::to_string(options_.batch_size));
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw std::invalid_argument("DataLoader: rank " + std::to_string(options_.rank) + " of " +
                                std::to_string(options_.world_size));
  if (dataset_->size() == 0) throw std::invalid_argument("the dataset has no samples: " + dataset_->description());
  if (options_.drop_last && samples_per_epoch() < options_.batch_size)
    throw std::invalid_argument("the dataset has " + std::to_string(dataset_->size()) + " samples" +
                                (options_.world_size > 1 ? ", " + std::to_string(samples_per_epoch()) + " per process," : "") +
                                " fewer than batch_size " + std::to_string(options_.batch_size) +
                                " (with drop_last no batch would be left)");
}

int64_t DataLoader::samples_per_epoch() const {
  const auto n = static_cast<int64_t>(dataset_->size());
  return (n + options_.world_size - 1) / options_.world_size;
}

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = samples_per_epoch();
  return options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  const auto n = static_cast<int64_t>(dataset_->size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  // DistributedSampler's split: pad with the order's own start to a multiple of the ranks, then every
  // world_size-th index from this rank.
  auto shard = [this](const std::vector<int64_t>& all) {
    if (options_.world_size == 1) return all;
    std::vector<int64_t> mine;
    const int64_t padded = samples_per_epoch() * options_.world_size;
    for (int64_t i = options_.rank; i < padded; i += options_.world_size)
      mine.push_back(all[static_cast<size_t>(i) % all.size()]);
    return mine;
  };
  if (!options_.shuffle) {
    std::iota(order.begin(), order.end(), int64_t{0});
    return shard(order);
  }
  // The same generator and call as DistributedSampler: randperm(n) under manual_seed(seed + epoch).
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed + static_cast<uint64_t>(epoch));
  const auto perm = torch::randperm(n, generator, torch::TensorOptions().dtype(torch::kLong)).contiguous();
  const auto* p = perm.data_ptr<int64_t>();
  std::copy(p, p + n, order.begin());
  return shard(order);
}

const std::vector<int64_t>& DataLoader::cached_order(int64_t epoch) const {
  if (epoch != cached_epoch_) {
    cached_order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  return cached_order_;
}

Batch DataLoader::batch(int64_t epoch, int64_t batch_index) const {
  if (batch_index < 0 || batch_index >= batches_per_epoch())
    throw std::out_of_range("batch " + std::to_string(batch_index) + " of an epoch of " +
                            std::to_string(batches_per_epoch()));
  const auto& order = cached_order(epoch);
  const size_t begin = static_cast<size_t>(batch_index * options_.batch_size);
  const size_t end = std::min(order.size(), begin + static_cast<size_t>(options_.batch_size));
  std::vector<Sample> samples;
  std::vector<size_t> indices;
  for (size_t i = begin; i < end; ++i) {
    indices.push_back(static_cast<size_t>(order[i]));
    samples.push_back(dataset_->get(indices.back()));
  }
  Batch b = collate(samples, options_.pad_id, options_.pad_to_multiple_of);
  b.indices = std::move(indices);
  return b;
}

void DataLoader::seek(const DataCursor& cursor) {
  if (cursor.epoch < 0 || cursor.batch_index < 0)
    throw std::out_of_range("data cursor (epoch " + std::to_string(cursor.epoch) + ", batch " +
                            std::to_string(cursor.batch_index) + ") is negative");
  cursor_ = cursor;
}

std::optional<Batch> DataLoader::next() {
  if (cursor_.batch_index >= batches_per_epoch()) {
    cursor_.batch_index = batches_per_epoch();
    return std::nullopt;
  }
  Batch b = batch(cursor_.epoch, cursor_.batch_index);
  ++cursor_.batch_index;
  return b;
}

}  // namespace tb::data
