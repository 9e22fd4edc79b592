// The compile backend's fused CPU kernels. Each replaces a chain of eager ops of the training step
// with one pass (or one chunked loop) and has a hand-written backward; each is checked against the
// eager composition in tests/core/test_compile.cpp. The row loops are built for AVX-512, AVX2 and
// plain x86-64 and the best the CPU has is picked at load time (GCC target_clones).
#pragma once

#include <string>
#include <utility>

#include <torch/types.h>

#include "compile/gemm.h"

namespace tb::compile {

// The instruction set the fused row loops run with on this CPU: "avx512", "avx2" or "scalar".
std::string instruction_set();

// RMSNorm, as models::RMSNorm computes it: y = x / sqrt(mean(x^2) + eps) * scale over the last dim,
// accumulated in fp32. x [..., D] fp32 or bf16, scale [D] of x's dtype.
torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& scale, double eps);

// The residual add fused with the norm that follows it: h = x + r and n = rms_norm(h) * scale in one
// pass over the rows (h rounded to x's dtype before the norm, as the eager x + r then RMSNorm).
// Returns {h, n}; backward takes the gradients of both.
std::pair<torch::Tensor, torch::Tensor> fused_add_rms_norm(const torch::Tensor& x, const torch::Tensor& r,
                                                           const torch::Tensor& scale, double eps);

// SwiGLU's gate: silu(a) * b, elementwise; a and b of one shape and dtype.
torch::Tensor fused_swiglu(const torch::Tensor& a, const torch::Tensor& b);

// The output projection fused with the cross entropy: sum over rows whose label is not
// ignore_index of logsumexp(h W^T) - (h W^T)[label], computed `chunk_rows` rows at a time, so the
// [rows, vocab] logits never exist in full. hidden [N, D], weight [V, D] (same dtype), labels int64 [N].
// The gradients are computed in the same chunked pass (the loss is the last op of the step) and
// scaled by the incoming gradient in backward. The chunk products run through `backend`. Returns a
// fp32 scalar.
torch::Tensor fused_linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                         const torch::Tensor& labels, int64_t ignore_index, int64_t chunk_rows,
                                         GemmBackend backend = GemmBackend::aten);

}  // namespace tb::compile
