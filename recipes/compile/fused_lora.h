// The LoRA path of a compiled projection (compile::project): y = base + scale * (x A^T) B^T, with the
// update accumulated into `base` by its second product, so the [N, out] update, its scaled copy and the
// sum that eager makes never exist; backward multiplies g B once and scales the rank-r products instead
// of the [N, out] gradient.
#pragma once

#include <torch/types.h>

#include "compile/gemm.h"

namespace tb::compile {

// base += scale * (x A^T) B^T, in place, returned (autograd sees an in-place op on base: base must be
// a fresh result that nothing else saved and not a view, such as gemm_linear's or fused_linear_nf4's
// output). x [..., in],
// A [r, in], B [out, r] of x's dtype (fp32 or bf16), base [..., out] contiguous of x's dtype. The
// products run through `backend`; base gets the gradient unchanged, x, A and B theirs.
torch::Tensor fused_lora_update(const torch::Tensor& base, const torch::Tensor& x, const torch::Tensor& a,
                                const torch::Tensor& b, double scale, GemmBackend backend);

}  // namespace tb::compile
