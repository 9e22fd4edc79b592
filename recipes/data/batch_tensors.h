// LibTorch views of a collated Batch (kept apart from dataloader.h so that header stays torch-free).
#pragma once

#include <torch/types.h>

#include "data/dataloader.h"

namespace tb::data {

struct TensorBatch {
  torch::Tensor tokens;     // int64 [B, T]
  torch::Tensor labels;     // int64 [B, T], -100 where ignored
  torch::Tensor input_pos;  // int64 [B, T] for packed data, else undefined
};

inline TensorBatch to_tensors(const Batch& b) {
  const auto options = torch::TensorOptions().dtype(torch::kLong);
  auto tensor = [&](const std::vector<int64_t>& v) {
    return torch::from_blob(const_cast<int64_t*>(v.data()), {b.batch_size, b.seq_len}, options).clone();
  };
  TensorBatch t;
  t.tokens = tensor(b.tokens);
  t.labels = tensor(b.labels);
  if (!b.input_pos.empty()) t.input_pos = tensor(b.input_pos);
  return t;
}

}  // namespace tb::data
