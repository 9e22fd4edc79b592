#include "models/loss.h"

#include <algorithm>

#include <torch/nn/functional/loss.h>

#include "models/transformer.h"

namespace tb::models {

at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.to(torch::kFloat32), labels,
                          F::CrossEntropyFuncOptions().ignore_index(ignore_index).reduction(torch::kSum));
}

at::Tensor token_loss_sum(TransformerDecoderImpl& model, const at::Tensor& hidden, const at::Tensor& labels,
                          const LossSpec& spec) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(spec.num_output_chunks, hidden.size(1)));
  if (chunks == 1) {
    auto logits = model.output_projection(hidden);
    return cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}), spec.ignore_index);
  }
  auto hidden_chunks = hidden.chunk(chunks, /*dim=*/1);
  auto label_chunks = labels.chunk(chunks, /*dim=*/1);
  at::Tensor total;
  for (size_t i = 0; i < hidden_chunks.size(); ++i) {
    auto logits = model.output_projection(hidden_chunks[i]);
    auto part =
        cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), label_chunks[i].reshape({-1}), spec.ignore_index);
    total = total.defined() ? total + part : part;
  }
  return total;
}

}  // namespace tb::models
