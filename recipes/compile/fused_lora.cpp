#include "compile/fused_lora.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

namespace tb::compile {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct LoRAUpdateFn : torch::autograd::Function<LoRAUpdateFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& base, const torch::Tensor& x,
                               const torch::Tensor& a, const torch::Tensor& b, double scale, int64_t backend) {
    const auto be = static_cast<GemmBackend>(backend);
    const auto x2 = x.reshape({-1, x.size(-1)});
    // The scale goes on the rank-r factor (exact in bf16 for the usual power-of-two alpha / rank).
    auto xa = gemm(x2, a.t(), x.scalar_type(), be);  // [N, r]
    xa.mul_(scale);
    gemm_into(base.view({-1, b.size(0)}), xa, b.t(), /*accumulate=*/true, be);
    ctx->mark_dirty({base});
    ctx->save_for_backward({x, a, b, xa});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["backend"] = backend;
    return base;
  }

  // With xa_s = scale * x A^T: dB = g^T xa_s, d(x A^T) = scale * g B, dA = that^T x, dx = that A.
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& a = saved[1];
    const auto& b = saved[2];
    const auto& xa = saved[3];
    const auto be = static_cast<GemmBackend>(ctx->saved_data["backend"].toInt());
    const auto g = grads[0].reshape({-1, b.size(0)});
    const auto x2 = x.reshape({-1, x.size(-1)});
    torch::Tensor dx, da, db;
    if (ctx->needs_input_grad(3)) {
      db = torch::empty(b.sizes(), b.options());
      gemm_into(db, g.t(), xa, false, be);
    }
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      auto gb = gemm(g, b, x.scalar_type(), be);  // [N, r]
      gb.mul_(ctx->saved_data["scale"].toDouble());
      if (ctx->needs_input_grad(2)) {
        da = torch::empty(a.sizes(), a.options());
        gemm_into(da, gb.t(), x2, false, be);
      }
      if (ctx->needs_input_grad(1)) {
        dx = torch::empty(x2.sizes(), x.options());
        gemm_into(dx, gb, a, false, be);
        dx = dx.view(x.sizes());
      }
    }
    return {grads[0], dx, da, db, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_lora_update(const torch::Tensor& base, const torch::Tensor& x, const torch::Tensor& a,
                                const torch::Tensor& b, double scale, GemmBackend backend) {
  RECORD_FUNCTION("tb::fused_lora_update", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == b.size(1) && x.size(-1) == a.size(1),
              "fused_lora_update: x [..., in], A [r, in] and B [out, r] expected, got ", x.sizes(), ", ", a.sizes(),
              ", ", b.sizes());
  TORCH_CHECK(base.size(-1) == b.size(0) && base.numel() / b.size(0) == x.numel() / x.size(-1),
              "fused_lora_update: base ", base.sizes(), " does not match x ", x.sizes(), " and B ", b.sizes());
  TORCH_CHECK(base.is_contiguous() && base.scalar_type() == x.scalar_type() && a.scalar_type() == x.scalar_type() &&
                  b.scalar_type() == x.scalar_type(),
              "fused_lora_update: a contiguous base and one dtype for base, x, A and B expected");
  return LoRAUpdateFn::apply(base, x, a, b, scale, static_cast<int64_t>(backend));
}

}  // namespace tb::compile
