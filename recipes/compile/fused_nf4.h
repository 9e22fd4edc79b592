// The compiled step's linear projections. Every projection of the compiled step goes through
// project(): a LoRALinear over an NF4 base (QLoRA) runs its base through fused_linear_nf4, which never
// holds the whole dequantised weight; a Linear or LoRALinear runs its products through the plan's GEMM
// backend (compile/gemm.h); any other module runs its own forward.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/nn/modules/container/any.h>
#include <torch/types.h>

#include "compile/gemm.h"

namespace tb::quant {
struct NF4Weight;
}

namespace tb::compile {

// module.forward(x), computed as follows for an fp32/bf16 x of the module's dtype: a peft::LoRALinear
// with a quantized_base runs fused_linear_nf4 for the base plus the LoRA path as LoRALinear computes
// it (its dropout drawn by the same call, after the base, so the random stream advances as in the
// eager forward); with a backend other than aten, a torch::nn::Linear and a plain LoRALinear run every
// product (forward and backward) through gemm_linear on that backend.
torch::Tensor project(torch::nn::AnyModule& projection, const torch::Tensor& x,
                      GemmBackend backend = GemmBackend::aten);

// y = x @ W^T for an NF4 weight W [out, in], x [..., in] fp32 or bf16, as quant::linear_nf4 computes
// it: W dequantised in fp32 and rounded to x's dtype. The weight is dequantised a tile at a time
// (`tile_elements` values: whole output rows in forward, whole input columns for the input gradient
// in backward) into a per-thread buffer and multiplied into its slice of the result; tiles run in
// parallel, each tile's product through `backend`. 0 picks a cache-sized tile. Autograd gives x its gradient, never the weight.
torch::Tensor fused_linear_nf4(const torch::Tensor& x, const std::shared_ptr<const quant::NF4Weight>& weight,
                               int64_t tile_elements = 0, GemmBackend backend = GemmBackend::aten);

}  // namespace tb::compile
