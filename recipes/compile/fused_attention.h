// The compiled step's attention: fused rotary embeddings and a blockwise causal attention with an
// online softmax (FlashAttention's scheme, on the CPU with BLAS tiles), both with hand-written
// backward passes. The attention keeps only its inputs, its output and one logsumexp per query row for
// backward, never a [T, T] matrix, and skips the key blocks above the causal diagonal.
#pragma once

#include <vector>

#include <torch/types.h>

#include "compile/gemm.h"
#include "models/layers.h"

namespace tb::compile {

// models::apply_rotary's rotation of interleaved pairs (x[..., 2i], x[..., 2i+1]) by pos * theta_i, on
// x [B, T, H, D] (a projection's output viewed per head; unit last stride), cos/sin fp32 [T, D/2] or
// [B, T, D/2]. Returns contiguous [B, T, H, D] in x's dtype, rotated in fp32.
torch::Tensor fused_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// softmax(q k^T * scale, causal) v (scale 0: 1 / sqrt(D)) for q [B, H, T, D] and k, v [B, KV, T, D] (any strides with a unit
// last stride): query t attends keys 0..t (with a sliding `window` > 0, keys t - window < j <= t, and the
// key tiles wholly before a query tile's window are skipped), q head h uses kv head h / (H / KV) without
// a copy.
// Computed `block` queries x up to 512 keys at a time (the online softmax rescales across key tiles),
// softmax and sums in fp32. The tile products run through `backend`: bf16 inputs are read in place by
// oneDNN (probabilities and score gradients rounded to bf16 for their products, as eager's bf16 softmax
// output is), widened to fp32 for ATen. Returns [B, T, H, D] contiguous (the layout the output
// projection reads), in q's dtype.
torch::Tensor fused_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     int64_t block, GemmBackend backend = GemmBackend::aten, int64_t window = 0,
                                     double scale = 0);

// What the attention node of `output` (a fused_causal_attention result) keeps for backward; empty when
// `output` did not come from it. For tests and memory accounting.
std::vector<torch::Tensor> attention_saved_tensors(const torch::Tensor& output);

// Whether `pos` is the training step's plain causal attention over its own T tokens (no KV cache,
// blocked = triu(ones(T, T), 1)): the case fused_causal_attention computes.
bool is_plain_causal(const models::PositionInfo& pos, int64_t seq_len);

// MultiHeadAttention's forward through the fused kernels: every projection through project(), the
// rotation, the causal attention; the eager module's forward when `pos` is not the plain causal case.
torch::Tensor compiled_attention(models::MultiHeadAttentionImpl& attn, const torch::Tensor& x,
                                 const models::PositionInfo& pos, int64_t block,
                                 GemmBackend backend = GemmBackend::aten);

}  // namespace tb::compile
