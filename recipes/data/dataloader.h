// Batches for the training loop: a per-epoch permutation, padded collation and a cursor that a
// recipe saves in recipe_state and restores to continue exactly where it stopped.
//
//   tb::data::DataLoader loader(dataset, {.batch_size = 4, .shuffle = true, .seed = 0, .pad_id = tok->pad_id()});
//   loader.seek(saved_cursor);                 // or start_epoch(e)
//   while (auto batch = loader.next()) { ... }  // then save loader.cursor()
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "data/dataset.h"

namespace tb::data {

// Right-padded batch, row-major [batch_size, seq_len]. See batch_tensors.h for LibTorch tensors.
struct Batch {
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  std::vector<int64_t> tokens;     // pad_id where padded
  std::vector<int64_t> labels;     // -100 where padded (and wherever the sample masks)
  std::vector<int64_t> input_pos;  // packed datasets only (else empty); padded with 0
  std::vector<size_t> indices;     // dataset indices of the rows, in order
  int64_t num_label_tokens() const;  // labels that are not -100
};

// Pads every sample to the longest one, rounded up to a multiple of pad_to_multiple_of (>= 1).
// Empty input gives an empty batch.
Batch collate(const std::vector<Sample>& samples, int64_t pad_id, int64_t pad_to_multiple_of = 1,
              int64_t ignore_index = kIgnoreIndex);

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = true;
  // The order of epoch e is torch.randperm(n, generator seeded with seed + e): the same as
  // torch.utils.data.DistributedSampler(shuffle=True, seed=seed) with set_epoch(e) on one process.
  uint64_t seed = 0;
  bool drop_last = true;  // torchtune trains with drop_last=True
  int64_t pad_id = 0;
  int64_t pad_to_multiple_of = 1;
  // Data parallel: this process reads shard `rank` of `world_size`, as DistributedSampler splits an
  // epoch (the order padded with its own start to a multiple of world_size, then every world_size-th
  // index from `rank`), so batch k of every rank together is batch k of one process at world_size times
  // the batch size.
  int64_t rank = 0;
  int64_t world_size = 1;
};

// The next batch to produce: batch `batch_index` of epoch `epoch`.
struct DataCursor {
  int64_t epoch = 0;
  int64_t batch_index = 0;
  bool operator==(const DataCursor& o) const { return epoch == o.epoch && batch_index == o.batch_index; }
};

class DataLoader {
 public:
  // Throws std::invalid_argument when batch_size < 1 or the dataset is empty.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);

  int64_t batches_per_epoch() const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // The dataset indices this process reads in an epoch: the permutation (the identity without
  // shuffling), or its shard of it.
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  // Any batch, by position (does not move the cursor).
  Batch batch(int64_t epoch, int64_t batch_index) const;

  void seek(const DataCursor& cursor);  // throws std::out_of_range for a negative position
  void start_epoch(int64_t epoch) { seek({epoch, 0}); }
  DataCursor cursor() const { return cursor_; }
  // The batch at the cursor, then the cursor moves on; nullopt when the epoch has no more batches
  // (the cursor then stays at {epoch, batches_per_epoch()}; call start_epoch(epoch + 1)).
  std::optional<Batch> next();

 private:
  const std::vector<int64_t>& cached_order(int64_t epoch) const;
  int64_t samples_per_epoch() const;  // this process's

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  DataCursor cursor_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_order_;
};

}  // namespace tb::data
