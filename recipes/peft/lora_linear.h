// LoRALinear: a frozen linear projection plus a trainable low-rank update (Hu et al., 2021), with
// torchtune's parameter names and PEFT's initialisation:
//   y = x W^T + (alpha / rank) * lora_b(lora_a(dropout(x)))
//   weight  [out, in]   frozen base (requires_grad false, no bias)
//   lora_a  [rank, in]  Kaiming-uniform (a = sqrt(5), as nn.Linear resets)
//   lora_b  [out, rank] zeros, so a fresh module computes exactly the base projection
// It is a drop-in for the decoder's LinearFactory (forward(const Tensor&) -> Tensor, base under `weight`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/deferred_weight.h"

namespace tb::quant {
struct NF4Weight;
}

namespace tb::peft {

class LoRALinearImpl : public torch::nn::Module, public models::DeferredWeight {
 public:
  // Throws std::invalid_argument for non-positive dims or rank, or dropout outside [0, 1). `bias`: the
  // base projection has a frozen bias (Qwen2's q, k, v), added to the base path as PEFT's base layer does.
  // `nf4_on_load` (QLoRA): the base is not allocated; its values, when loaded or drawn, are stored in NF4
  // straight away (models::DeferredWeight), so the full-precision base never exists.
  LoRALinearImpl(int64_t in_dim, int64_t out_dim, int64_t rank, double alpha, double dropout_p = 0.0,
                 bool bias = false, bool nf4_on_load = false);

  // x [..., in] -> [..., out]. Plain composed ATen ops: the eager baseline.
  torch::Tensor forward(const torch::Tensor& x);

  // lora_a Kaiming-uniform, lora_b zeros (PEFT's init). The base weight is left alone.
  void reset_lora_parameters();

  int64_t in_dim() const { return in_dim_; }
  int64_t out_dim() const { return out_dim_; }
  int64_t rank() const { return rank_; }
  double alpha() const { return alpha_; }
  double dropout_p() const { return dropout_p_; }
  double scale() const { return alpha_ / static_cast<double>(rank_); }  // the factor on the LoRA path

  void pretty_print(std::ostream& stream) const override;

  torch::Tensor weight;  // frozen base [out, in]
  torch::Tensor bias;    // frozen base bias [out], undefined without one
  torch::nn::Linear lora_a{nullptr};
  torch::nn::Linear lora_b{nullptr};
  torch::nn::Dropout dropout{nullptr};

  // Hook for a quantised base (QLoRA): when set, the base path is base_forward(x) instead of
  // x @ weight^T, e.g. x @ dequantize(W_nf4)^T. The LoRA path is unchanged.
  std::function<torch::Tensor(const torch::Tensor&)> base_forward;

  // QLoRA (peft/qlora.h): set by the qlora_* builders, then the NF4 base that replaced `weight`.
  bool quantize_base = false;
  std::shared_ptr<const quant::NF4Weight> quantized_base;
  // The base becomes `nf4`: the base path runs through it and the full-precision weight is freed (the
  // parameter stays registered, empty, so names do not change).
  void set_quantized_base(std::shared_ptr<const quant::NF4Weight> nf4);

  // models::DeferredWeight, for a module built nf4_on_load: the checkpoint's (or drawn) values of the
  // base, converted to the weight's dtype, are quantised to NF4 as they come.
  bool awaiting_weight() const override { return awaiting_weight_; }
  std::vector<int64_t> weight_shape() const override { return {out_dim_, in_dim_}; }
  void take_weight(const torch::Tensor& values) override;

 private:
  int64_t in_dim_, out_dim_, rank_;
  double alpha_, dropout_p_;
  bool awaiting_weight_ = false;
};
TORCH_MODULE(LoRALinear);

// Every LoRALinear inside `model` with its qualified name (e.g. layers.0.attn.q_proj), in module order.
std::vector<std::pair<std::string, LoRALinearImpl*>> lora_modules(const torch::nn::Module& model);

}  // namespace tb::peft
