#include "compile/gemm.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <map>
#include <tuple>
#include <unordered_map>

#ifdef TB_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tb::compile {
namespace {

bool reduced_or_float(torch::ScalarType t) { return t == torch::kFloat || t == torch::kBFloat16; }

torch::Tensor as_tensor(const MatrixView& m) {
  return torch::from_blob(m.data, {m.rows, m.cols}, {m.row_stride, m.col_stride}, torch::dtype(m.dtype));
}

MatrixView view_of(const torch::Tensor& t) {
  return {t.data_ptr(), t.size(0), t.size(1), t.stride(0), t.stride(1), t.scalar_type()};
}

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

// A matrix's strides as oneDNN takes them: a size-1 dimension's stride is free in torch, so it is
// given the value a dense layout would have.
std::pair<int64_t, int64_t> strides_2d(const MatrixView& m) {
  int64_t s0 = m.row_stride, s1 = m.col_stride;
  if (m.rows == 1) s0 = s1 == 1 ? m.cols : 1;
  if (m.cols == 1) s1 = s0 == 1 ? m.rows : 1;
  return {s0, s1};
}

// A product's primitive with its memory objects and arguments, built once per shape, layout and
// dtype and kept per thread (the attention tiles call in from the intra-op workers); a call only
// points the memory objects at its data.
struct CachedProduct {
  dnnl::matmul primitive;
  memory a, b, c;
  std::unordered_map<int, memory> args;
};
using ProductKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, bool>;

bool onednn_gemm_into(const MatrixView& c, const MatrixView& a, const MatrixView& b, bool accumulate) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  const auto [sa0, sa1] = strides_2d(a);
  const auto [sb0, sb1] = strides_2d(b);
  // c is written row by row: a unit column stride (free when it has one column), rows ldc apart.
  const int64_t sc1 = c.cols == 1 ? 1 : c.col_stride;
  const int64_t sc0 = c.rows == 1 ? c.cols : c.row_stride;
  if (sc1 != 1 || sc0 < N || (sa0 != 1 && sa1 != 1) || (sb0 != 1 && sb1 != 1)) return false;
  thread_local std::map<ProductKey, CachedProduct> products;
  thread_local dnnl::stream stream(cpu_engine());
  const ProductKey key{M, K, N, sa0, sa1, sb0, sb1, sc0, static_cast<int>(a.dtype), static_cast<int>(c.dtype), accumulate};
  auto found = products.find(key);
  if (found == products.end()) {
    const memory::desc a_desc({M, K}, dnnl_type(a.dtype), {sa0, sa1});
    const memory::desc b_desc({K, N}, dnnl_type(b.dtype), {sb0, sb1});
    const memory::desc c_desc({M, N}, dnnl_type(c.dtype), {sc0, sc1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, cpu_engine());
      CachedProduct product{dnnl::matmul(pd), memory(a_desc, cpu_engine(), DNNL_MEMORY_NONE),
                            memory(b_desc, cpu_engine(), DNNL_MEMORY_NONE), memory(c_desc, cpu_engine(), DNNL_MEMORY_NONE),
                            {}};
      product.args = {{DNNL_ARG_SRC, product.a}, {DNNL_ARG_WEIGHTS, product.b}, {DNNL_ARG_DST, product.c}};
      found = products.emplace(key, std::move(product)).first;
    } catch (const dnnl::error&) {
      return false;  // a layout or dtype oneDNN does not take: ATen computes it
    }
  }
  CachedProduct& product = found->second;
  product.a.set_data_handle(a.data);
  product.b.set_data_handle(b.data);
  product.c.set_data_handle(c.data);
  product.primitive.execute(stream, product.args);
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

void gemm_into(const MatrixView& c, const MatrixView& a, const MatrixView& b, bool accumulate, GemmBackend backend) {
  TORCH_CHECK(a.cols == b.rows && c.rows == a.rows && c.cols == b.cols, "gemm_into: shapes [", a.rows, ", ", a.cols,
              "] @ [", b.rows, ", ", b.cols, "] -> [", c.rows, ", ", c.cols, "] do not match");
  TORCH_CHECK(a.dtype == b.dtype && reduced_or_float(a.dtype), "gemm_into: a and b must both be fp32 or bf16");
  TORCH_CHECK(c.dtype == torch::kFloat || c.dtype == a.dtype, "gemm_into: c must be fp32 or a's dtype");
  if (c.rows == 0 || c.cols == 0) return;
  if (a.cols == 0) {
    if (!accumulate) as_tensor(c).zero_();
    return;
  }
#ifdef TB_HAVE_ONEDNN
  if (backend == GemmBackend::onednn && onednn_available() && onednn_gemm_into(c, a, b, accumulate)) return;
#else
  (void)backend;
#endif
  aten_gemm_into(as_tensor(c), as_tensor(a), as_tensor(b), accumulate);
}

void gemm_into(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b, bool accumulate,
               GemmBackend backend) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "gemm_into: 2-D a, b and c expected");
  TORCH_CHECK(a.size(1) == b.size(0) && c.size(0) == a.size(0) && c.size(1) == b.size(1), "gemm_into: shapes ",
              a.sizes(), " @ ", b.sizes(), " -> ", c.sizes(), " do not match");
  if (!a.device().is_cpu() || !b.device().is_cpu() || !c.device().is_cpu()) {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "gemm_into: a and b must both be fp32 or bf16");
    aten_gemm_into(c, a, b, accumulate);
    return;
  }
  gemm_into(view_of(c), view_of(a), view_of(b), accumulate, backend);
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
