// The training loss: next-token cross entropy summed over the unmasked positions (the recipes divide by
// the number of those tokens once per optimizer step, as torchtune does). The product of the `loss:`
// components, shared by the eager step, the compile backend's reference and eval.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tb::models {

class TransformerDecoderImpl;

// `loss:` Cross entropy over next-token labels with an ignore index.
struct LossSpec {
  int64_t ignore_index = -100;
  int64_t num_output_chunks = 1;  // >1: CEWithChunkedOutputLoss (the output projection is chunked)
  // LinearCrossEntropyLoss: each chunk's logits are dropped after its loss and recomputed in backward,
  // so at most one chunk of logits exists at a time in backward too (the eager path saves the memory).
  bool recompute_chunks = false;
};

// Sum of token cross entropies of `logits` [N, V] (any float dtype; computed in fp32) against
// `labels` [N], skipping ignore_index.
at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index);

// Sum over unmasked positions of the next-token cross entropy of `hidden` [B, T, dim] (the final-norm
// output). The output projection runs on `spec.num_output_chunks` slices of the sequence at a time
// (CEWithChunkedOutputLoss), so only one slice of logits is alive at a time in the forward pass; with
// spec.recompute_chunks also in the backward pass (LinearCrossEntropyLoss).
at::Tensor token_loss_sum(TransformerDecoderImpl& model, const at::Tensor& hidden, const at::Tensor& labels,
                          const LossSpec& spec);

}  // namespace tb::models
