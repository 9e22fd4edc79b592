#include "compile/gemm.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <map>
#include <tuple>

#ifdef TB_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tb::compile {
namespace {

bool reduced_or_float(torch::ScalarType t) { return t == torch::kFloat || t == torch::kBFloat16; }

void aten_gemm_into(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b, bool accumulate) {
  if (c.scalar_type() == a.scalar_type()) {
    if (accumulate)
      c.addmm_(a, b);
    else
      at::mm_out(const_cast<torch::Tensor&>(c), a, b);
    return;
  }
  const auto product = at::mm(a, b).to(c.scalar_type());
  if (accumulate)
    c.add_(product);
  else
    c.copy_(product);
}

#ifdef TB_HAVE_ONEDNN

using dnnl::memory;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::data_type dnnl_type(torch::ScalarType t) {
  return t == torch::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// A 2-D tensor's strides as oneDNN takes them: a size-1 dimension's stride is free in torch, so it is
// given the value a dense layout would have.
std::pair<int64_t, int64_t> strides_2d(const torch::Tensor& t) {
  int64_t s0 = t.stride(0), s1 = t.stride(1);
  if (t.size(0) == 1) s0 = s1 == 1 ? t.size(1) : 1;
  if (t.size(1) == 1) s1 = s0 == 1 ? t.size(0) : 1;
  return {s0, s1};
}

// Primitives are built once per shape, layout and dtype and kept per thread (the attention tiles call
// in from the intra-op workers).
using PrimitiveKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, bool>;

bool onednn_gemm_into(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b, bool accumulate) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const auto [sa0, sa1] = strides_2d(a);
  const auto [sb0, sb1] = strides_2d(b);
  // c is written row by row: a unit column stride (free when it has one column), rows ldc apart.
  const int64_t sc1 = c.size(1) == 1 ? 1 : c.stride(1);
  const int64_t sc0 = c.size(0) == 1 ? c.size(1) : c.stride(0);
  if (sc1 != 1 || sc0 < N || (sa0 != 1 && sa1 != 1) || (sb0 != 1 && sb1 != 1)) return false;
  thread_local std::map<PrimitiveKey, dnnl::matmul> primitives;
  thread_local dnnl::stream stream(cpu_engine());
  const PrimitiveKey key{M, K, N, sa0, sa1, sb0, sb1, sc0, static_cast<int>(a.scalar_type()),
                         static_cast<int>(c.scalar_type()), accumulate};
  const memory::desc a_desc({M, K}, dnnl_type(a.scalar_type()), {sa0, sa1});
  const memory::desc b_desc({K, N}, dnnl_type(b.scalar_type()), {sb0, sb1});
  const memory::desc c_desc({M, N}, dnnl_type(c.scalar_type()), {sc0, sc1});
  auto found = primitives.find(key);
  if (found == primitives.end()) {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, cpu_engine());
      found = primitives.emplace(key, dnnl::matmul(pd)).first;
    } catch (const dnnl::error&) {
      return false;  // a layout or dtype oneDNN does not take: ATen computes it
    }
  }
  const memory a_mem(a_desc, cpu_engine(), a.data_ptr());
  const memory b_mem(b_desc, cpu_engine(), b.data_ptr());
  const memory c_mem(c_desc, cpu_engine(), c.data_ptr());
  found->second.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  stream.wait();
  return true;
}

#endif

// ---- linear with both products through the backend -------------------------------------------------------

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct GemmLinearFn : torch::autograd::Function<GemmLinearFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               int64_t backend) {
    const auto be = static_cast<GemmBackend>(backend);
    auto shape = x.sizes().vec();
    shape.back() = weight.size(0);
    // Allocated in its final shape, not returned as a view: autograd lets a later op (the fused LoRA
    // update) add into a custom function's output in place only when it is not a view.
    auto y = torch::empty(shape, x.options());
    gemm_into(y.view({-1, weight.size(0)}), x.reshape({-1, x.size(-1)}), weight.t(), false, be);
    ctx->save_for_backward({x, weight});
    ctx->saved_data["backend"] = backend;
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto be = static_cast<GemmBackend>(ctx->saved_data["backend"].toInt());
    const auto dy = grads[0].reshape({-1, weight.size(0)});
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty({dy.size(0), weight.size(1)}, x.options());
      gemm_into(dx, dy, weight, false, be);
      dx = dx.view(x.sizes());
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty(weight.sizes(), weight.options());
      gemm_into(dw, dy.t(), x.reshape({-1, x.size(-1)}), false, be);
    }
    return {dx, dw, torch::Tensor()};
  }
};

}  // namespace

std::string gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::onednn ? "onednn" : "aten"; }

std::optional<GemmBackend> parse_gemm_backend(const std::string& name) {
  if (name == "aten") return GemmBackend::aten;
  if (name == "onednn") return GemmBackend::onednn;
  return std::nullopt;
}

bool onednn_available() {
#ifdef TB_HAVE_ONEDNN
  static const bool ok = [] {
    try {
      (void)cpu_engine();
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return ok;
#else
  return false;
#endif
}

void gemm_into(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b, bool accumulate,
               GemmBackend backend) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "gemm_into: 2-D a, b and c expected");
  TORCH_CHECK(a.size(1) == b.size(0) && c.size(0) == a.size(0) && c.size(1) == b.size(1), "gemm_into: shapes ",
              a.sizes(), " @ ", b.sizes(), " -> ", c.sizes(), " do not match");
  TORCH_CHECK(a.scalar_type() == b.scalar_type() && reduced_or_float(a.scalar_type()), "gemm_into: a and b must both be fp32 or bf16");
  TORCH_CHECK(c.scalar_type() == torch::kFloat || c.scalar_type() == a.scalar_type(), "gemm_into: c must be fp32 or a's dtype");
  if (c.numel() == 0) return;
  if (a.size(1) == 0) {
    if (!accumulate) c.zero_();
    return;
  }
#ifdef TB_HAVE_ONEDNN
  if (backend == GemmBackend::onednn && a.device().is_cpu() && onednn_available() &&
      onednn_gemm_into(c, a, b, accumulate))
    return;
#else
  (void)backend;
#endif
  aten_gemm_into(c, a, b, accumulate);
}

torch::Tensor gemm(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType out, GemmBackend backend) {
  auto c = torch::empty({a.size(0), b.size(1)}, a.options().dtype(out));
  gemm_into(c, a, b, false, backend);
  return c;
}

torch::Tensor gemm_linear(const torch::Tensor& x, const torch::Tensor& weight, GemmBackend backend) {
  RECORD_FUNCTION("tb::gemm_linear", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1), "gemm_linear: input of shape ",
              x.sizes(), " does not match weight ", weight.sizes());
  TORCH_CHECK(x.scalar_type() == weight.scalar_type(), "gemm_linear: input and weight dtypes differ");
  return GemmLinearFn::apply(x, weight, static_cast<int64_t>(backend));
}

}  // namespace tb::compile
