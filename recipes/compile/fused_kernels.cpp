#include "compile/fused_kernels.h"

#include "compile/element_access.h"
#include "compile/fast_exp.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <c10/util/BFloat16.h>

#include <cmath>
#include <vector>

namespace tb::compile {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// ---- row loops -------------------------------------------------------------------------------------------

// The row loops run on the tensors' own elements, fp32 or bf16 (compile/element_access.h), and compute in
// fp32, so a bf16 step makes no fp32 copies of its activations. Other dtypes go through fp32 copies.
torch::ScalarType row_dtype(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat;
}
torch::Tensor as_rows(const torch::Tensor& t, torch::ScalarType dtype) { return t.to(dtype).contiguous(); }

// y = x * rstd * scale with rstd = 1 / sqrt(mean(x^2) + eps); returns rstd.
template <typename T>
TB_INLINE float rms_norm_row(const T* x, const float* scale, T* y, int64_t d, float eps) {
  const float rstd = 1.0f / std::sqrt(dot(x, x, d) / float(d) + eps);
  for (int64_t i = 0; i < d; ++i) store(y[i], load(x[i]) * rstd * scale[i]);
  return rstd;
}

template <typename T>
TB_MULTIVERSION void rms_norm_rows(const T* x, const float* scale, T* y, float* rstd, int64_t begin, int64_t end,
                                   int64_t d, float eps) {
  for (int64_t r = begin; r < end; ++r) rstd[r] = rms_norm_row(x + r * d, scale, y + r * d, d, eps);
}

// h = x + r (stored in T: rounded in bf16, as the eager x + r), then y = rms_norm(h) * scale.
template <typename T>
TB_MULTIVERSION void add_rms_norm_rows(const T* x, const T* r, const float* scale, T* h, T* y, float* rstd,
                                       int64_t begin, int64_t end, int64_t d, float eps) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t o = row * d;
    for (int64_t i = 0; i < d; ++i) store(h[o + i], load(x[o + i]) + load(r[o + i]));
    rstd[row] = rms_norm_row(h + o, scale, y + o, d, eps);
  }
}

// RMSNorm's backward: dx = rstd * (g * scale) - x * rstd^3 * mean(g * scale * x), plus g_residual (the
// gradient that reaches a residual sum directly) when given; dscale += g * x * rstd.
template <typename T>
TB_MULTIVERSION void rms_norm_backward_rows(const T* x, const float* scale, const T* g, const T* g_residual,
                                            const float* rstd, T* dx, float* dscale, int64_t begin, int64_t end,
                                            int64_t d) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t o = row * d;
    float lanes[16] = {};  // sum(g * scale * x), in lanes as dot()
    float gx = 0.f;
    int64_t i = 0;
    for (; i + 16 <= d; i += 16)
      for (int j = 0; j < 16; ++j) lanes[j] += load(g[o + i + j]) * scale[i + j] * load(x[o + i + j]);
    for (; i < d; ++i) gx += load(g[o + i]) * scale[i] * load(x[o + i]);
    for (int j = 0; j < 16; ++j) gx += lanes[j];
    const float rs = rstd[row];
    const float k = rs * rs * rs * gx / float(d);
    for (i = 0; i < d; ++i) {
      const float gi = load(g[o + i]), xi = load(x[o + i]);
      const float residual = g_residual ? load(g_residual[o + i]) : 0.f;
      store(dx[o + i], rs * gi * scale[i] - xi * k + residual);
      dscale[i] += gi * xi * rs;
    }
  }
}

// silu(a) * b = a / (1 + e^-a) * b.
template <typename T>
TB_MULTIVERSION void swiglu_span(const T* a, const T* b, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float ai = load(a[i]);
    store(y[i], ai / (1.0f + exp_clamped(-ai)) * load(b[i]));
  }
}

template <typename T>
TB_MULTIVERSION void swiglu_backward_span(const T* a, const T* b, const T* g, T* da, T* db, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float ai = load(a[i]), bi = load(b[i]), gi = load(g[i]);
    const float s = 1.0f / (1.0f + exp_clamped(-ai));
    store(da[i], gi * bi * s * (1.0f + ai * (1.0f - s)));
    store(db[i], gi * ai * s);
  }
}

// One partial dscale per thread, summed at the end (no atomics; deterministic for a thread count).
template <typename T>
torch::Tensor rms_norm_backward(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& g,
                                const torch::Tensor& g_residual, const torch::Tensor& rstd, const torch::Tensor& dx) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const auto sf = scale.to(torch::kFloat).contiguous();
  const int threads = at::get_num_threads();
  auto partial = torch::zeros({threads, d}, sf.options());
  const T* xp = elements<T>(x);
  const T* gp = elements<T>(g);
  const T* grp = g_residual.defined() ? elements<T>(g_residual) : nullptr;
  const float* sp = sf.data_ptr<float>();
  const float* rp = rstd.data_ptr<float>();
  T* dxp = elements<T>(dx);
  float* pp = partial.data_ptr<float>();
  const int64_t per_thread = (rows + threads - 1) / threads;
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      rms_norm_backward_rows(xp, sp, gp, grp, rp, dxp, pp + t * d, std::min(rows, t * per_thread),
                             std::min(rows, (t + 1) * per_thread), d);
  });
  return partial.sum(0).to(scale.scalar_type());
}

// ---- RMSNorm ---------------------------------------------------------------------------------------------

struct RMSNormFn : torch::autograd::Function<RMSNormFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& scale, double eps) {
    const int64_t d = x.size(-1);
    const auto dtype = row_dtype(x);
    const auto xr = as_rows(x, dtype);
    const auto sf = scale.to(torch::kFloat).contiguous();
    auto y = torch::empty_like(xr);
    auto rstd = torch::empty({xr.numel() / d}, sf.options());
    with_elements(dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* xp = elements<T>(xr);
      T* yp = elements<T>(y);
      at::parallel_for(0, rstd.numel(), 16, [&](int64_t begin, int64_t end) {
        rms_norm_rows(xp, sf.data_ptr<float>(), yp, rstd.data_ptr<float>(), begin, end, d, float(eps));
      });
    });
    ctx->save_for_backward({xr, scale, rstd});
    return y.view(x.sizes()).to(x.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];  // in its row dtype
    const auto g = as_rows(grads[0], x.scalar_type());
    auto dx = torch::empty_like(x);
    torch::Tensor dscale;
    with_elements(x.scalar_type(), [&](auto tag) {
      dscale = rms_norm_backward<decltype(tag)>(x, saved[1], g, torch::Tensor(), saved[2], dx);
    });
    return {dx, dscale, torch::Tensor()};
  }
};

// ---- residual add + RMSNorm ------------------------------------------------------------------------------

struct AddRMSNormFn : torch::autograd::Function<AddRMSNormFn> {
  static tensor_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& r,
                             const torch::Tensor& scale, double eps) {
    const int64_t d = x.size(-1);
    const auto dtype = row_dtype(x);
    const auto xr = as_rows(x, dtype), rr = as_rows(r, dtype);
    const auto sf = scale.to(torch::kFloat).contiguous();
    auto h = torch::empty_like(xr), y = torch::empty_like(xr);
    auto rstd = torch::empty({xr.numel() / d}, sf.options());
    with_elements(dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* xp = elements<T>(xr);
      const T* rp = elements<T>(rr);
      T* hp = elements<T>(h);
      T* yp = elements<T>(y);
      at::parallel_for(0, rstd.numel(), 16, [&](int64_t begin, int64_t end) {
        add_rms_norm_rows(xp, rp, sf.data_ptr<float>(), hp, yp, rstd.data_ptr<float>(), begin, end, d, float(eps));
      });
    });
    ctx->save_for_backward({h, scale, rstd});
    return {h.view(x.sizes()).to(x.scalar_type()), y.view(x.sizes()).to(x.scalar_type())};
  }

  // dh = gh + RMSNorm's backward of gn; x and r both get dh.
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& h = saved[0];  // in its row dtype
    const auto& scale = saved[1];
    const auto gh = grads[0].defined() ? as_rows(grads[0], h.scalar_type()) : torch::Tensor();
    if (!grads[1].defined()) {
      const auto dh = gh.defined() ? gh : torch::zeros_like(h);
      return {dh, dh, torch::zeros_like(scale), torch::Tensor()};
    }
    const auto gn = as_rows(grads[1], h.scalar_type());
    auto dh = torch::empty_like(h);
    torch::Tensor dscale;
    with_elements(h.scalar_type(), [&](auto tag) {
      dscale = rms_norm_backward<decltype(tag)>(h, scale, gn, gh, saved[2], dh);
    });
    return {dh, dh, dscale, torch::Tensor()};
  }
};

// ---- SwiGLU ----------------------------------------------------------------------------------------------

struct SwiGLUFn : torch::autograd::Function<SwiGLUFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b) {
    const auto dtype = row_dtype(a);
    const auto ar = as_rows(a, dtype), br = as_rows(b, dtype);
    auto y = torch::empty_like(ar);
    with_elements(dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* ap = elements<T>(ar);
      const T* bp = elements<T>(br);
      T* yp = elements<T>(y);
      at::parallel_for(0, ar.numel(), 4096, [&](int64_t begin, int64_t end) {
        swiglu_span(ap + begin, bp + begin, yp + begin, end - begin);
      });
    });
    ctx->save_for_backward({ar, br});
    return y.view(a.sizes()).to(a.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];  // both in their row dtype
    const auto& b = saved[1];
    const auto g = as_rows(grads[0], a.scalar_type());
    auto da = torch::empty_like(a), db = torch::empty_like(b);
    with_elements(a.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T* ap = elements<T>(a);
      const T* bp = elements<T>(b);
      const T* gp = elements<T>(g);
      T* dap = elements<T>(da);
      T* dbp = elements<T>(db);
      at::parallel_for(0, a.numel(), 4096, [&](int64_t begin, int64_t end) {
        swiglu_backward_span(ap + begin, bp + begin, gp + begin, dap + begin, dbp + begin, end - begin);
      });
    });
    return {da, db};
  }
};

// ---- output projection + cross entropy -------------------------------------------------------------------

// max(row) of an fp32 row, or of a bf16 row that is widened into `widened` on the way.
TB_MULTIVERSION float row_max(const float* row, int64_t n) { return max_of(row, n); }
TB_MULTIVERSION float widen_with_max(const bf16_bits* row, float* widened, int64_t n) {
  return max_of(row, n, widened);
}

// x[i] = e^(x[i] - shift) for i < n; returns the sum.
TB_MULTIVERSION
float exp_in_place(float* x, int64_t n, float shift) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      x[i + j] = exp_clamped(x[i + j] - shift);
      lanes[j] += x[i + j];
    }
  float total = 0.f;
  for (; i < n; ++i) {
    x[i] = exp_clamped(x[i] - shift);
    total += x[i];
  }
  for (float l : lanes) total += l;
  return total;
}

// out[i] = x[i] * factor, stored in T (in place when out aliases x).
template <typename T>
TB_MULTIVERSION void scale_into(const float* x, T* out, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) store(out[i], x[i] * factor);
}

// One row of logits in fp32, whose max is m: returns logsumexp(row) - row[label] and, when `grad` is
// given, writes there the loss's gradient softmax(row) - onehot(label), in T (`grad` may alias the row).
// The row is read from L2 three times instead of streaming the chunk through memory once per eager op
// (logsumexp, gather, sub, exp, mul, scatter, and the bf16 copy of the gradient for its products).
template <typename T>
float cross_entropy_row(float* row, float m, int64_t vocab, int64_t label, T* grad) {
  const float target = row[label];
  const float sum = exp_in_place(row, vocab, m);
  if (grad) {
    const float inv = 1.0f / sum;
    const float at_label = row[label] * inv - 1.0f;
    scale_into(row, grad, vocab, inv);
    store(grad[label], at_label);
  }
  return m + std::log(sum) - target;
}

// Row by row over logits [rows, vocab] (fp32, or bf16 as oneDNN's products round them): each row's loss
// term into row_loss and, when `grads`, d loss / d logits = softmax - onehot(label) over the row (zero
// on ignored rows).
void cross_entropy_rows(const torch::Tensor& logits, const int64_t* labels, int64_t ignore_index, bool grads,
                        float* row_loss) {
  const int64_t vocab = logits.size(1);
  with_elements(logits.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    T* rows = elements<T>(logits);
    at::parallel_for(0, logits.size(0), 8, [&](int64_t begin, int64_t end) {
      std::vector<float> widened(std::is_same_v<T, float> ? 0 : vocab);  // a bf16 row in fp32
      for (int64_t r = begin; r < end; ++r) {
        T* row = rows + r * vocab;
        if (labels[r] == ignore_index) {
          if (grads) std::fill(row, row + vocab, T{});
          row_loss[r] = 0.f;
          continue;
        }
        float* values;
        float m;
        if constexpr (std::is_same_v<T, float>) {
          values = row;
          m = row_max(row, vocab);
        } else {
          values = widened.data();
          m = widen_with_max(row, values, vocab);
        }
        row_loss[r] = cross_entropy_row(values, m, vocab, labels[r], grads ? row : nullptr);
      }
    });
  });
}

struct LinearCrossEntropyFn : torch::autograd::Function<LinearCrossEntropyFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& labels, int64_t ignore_index, int64_t chunk_rows,
                               int64_t backend) {
    const auto be = static_cast<GemmBackend>(backend);
    const int64_t n = hidden.size(0), vocab = weight.size(0);
    const bool grad_h = hidden.requires_grad(), grad_w = weight.requires_grad();
    const bool grads = grad_h || grad_w;
    const bool reduced = hidden.scalar_type() != torch::kFloat;
    // In reduced precision the softmax and the gradient sums stay fp32, as the eager loss keeps them.
    // oneDNN multiplies bf16 by bf16 into fp32 sums and rounds the chunk's logits to bf16, as eager's bf16
    // logits are before its fp32 loss; the row kernel overwrites each row with its gradient in bf16 for
    // the two gradient products (as eager's bf16 logits gradient is). ATen's products take fp32 copies.
    const bool bf16_products = reduced && be == GemmBackend::onednn && onednn_available();
    const auto w32 = reduced && !bf16_products ? weight.to(torch::kFloat) : weight;
    const auto product_dtype = bf16_products ? hidden.scalar_type() : torch::kFloat;
    // dh: each chunk writes its own rows, so it is written in the products' dtype at once. dW sums
    // over chunks: in fp32, unless there is one chunk, whose product rounds once, as eager's does.
    const int64_t chunk = std::min(n, chunk_rows);
    const bool one_chunk = n > 0 && chunk == n;  // no rows: dW stays zeros
    torch::Tensor dh = grad_h ? torch::empty({n, hidden.size(1)}, hidden.options().dtype(product_dtype)) : torch::Tensor();
    torch::Tensor dw;
    if (grad_w) dw = one_chunk ? torch::empty(weight.sizes(), weight.options().dtype(product_dtype))
                               : torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat));
    const auto label_values = labels.to(torch::kLong).contiguous();
    const int64_t* lbl = label_values.data_ptr<int64_t>();
    for (int64_t r = 0; r < n; ++r)
      TORCH_CHECK(lbl[r] == ignore_index || (lbl[r] >= 0 && lbl[r] < vocab), "fused_linear_cross_entropy: label ",
                  lbl[r], " of row ", r, " is outside the vocabulary [0, ", vocab, ")");
    std::vector<float> row_loss(n);
    // The chunk's logits (the only ones alive), overwritten by their gradient.
    auto logits = torch::empty({chunk, vocab}, hidden.options().dtype(product_dtype));
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t e = std::min(n, s + chunk);
      const auto pg = logits.narrow(0, 0, e - s);
      gemm_into(pg, hidden.slice(0, s, e), weight.t(), false, be);
      cross_entropy_rows(pg, lbl + s, ignore_index, grads, row_loss.data() + s);
      if (!grads) continue;
      const auto h = hidden.slice(0, s, e);
      const auto hg = reduced && !bf16_products ? h.to(torch::kFloat) : h;
      if (grad_h) gemm_into(dh.slice(0, s, e), pg, w32, false, be);
      if (grad_w) gemm_into(dw, pg.t(), hg, /*accumulate=*/!one_chunk, be);
    }
    double total = 0;  // summed in row order, whatever the thread split
    for (float l : row_loss) total += l;
    ctx->saved_data["dh"] = dh;
    ctx->saved_data["dw"] = dw;
    ctx->saved_data["h_dtype"] = static_cast<int64_t>(hidden.scalar_type());
    return torch::scalar_tensor(total, torch::kFloat);
  }

  // The gradients were computed in forward; backward scales them by the incoming gradient (a plain
  // loss.backward() gives 1: nothing to scale) and hands them over (the context lets go of them, so
  // the parameter's gradient takes dW without a copy).
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    TORCH_CHECK(ctx->saved_data.count("handed_over") == 0, "fused_linear_cross_entropy: backward runs once");
    ctx->saved_data["handed_over"] = true;
    const auto g = grads[0];
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["h_dtype"].toInt());
    auto take = [&](const char* key) {
      auto t = ctx->saved_data[key].toTensor();
      ctx->saved_data[key] = torch::Tensor();
      return t;
    };
    auto dh = take("dh"), dw = take("dw");
    const bool unit = g.numel() == 1 && g.item<double>() == 1.0;
    auto finish = [&](const torch::Tensor& d) {
      if (!d.defined()) return d;
      return unit ? d.to(dtype) : (d * g).to(dtype);
    };
    return {finish(dh), finish(dw), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::string instruction_set() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "scalar";
}

torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& scale, double eps) {
  RECORD_FUNCTION("tb::fused_rms_norm", std::vector<c10::IValue>());  // named in profiles
  return RMSNormFn::apply(x, scale, eps);
}

std::pair<torch::Tensor, torch::Tensor> fused_add_rms_norm(const torch::Tensor& x, const torch::Tensor& r,
                                                           const torch::Tensor& scale, double eps) {
  RECORD_FUNCTION("tb::fused_add_rms_norm", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(x.sizes() == r.sizes() && x.scalar_type() == r.scalar_type(), "fused_add_rms_norm: x and r must match");
  auto out = AddRMSNormFn::apply(x, r, scale, eps);
  return {out[0], out[1]};
}

torch::Tensor fused_swiglu(const torch::Tensor& a, const torch::Tensor& b) {
  RECORD_FUNCTION("tb::fused_swiglu", std::vector<c10::IValue>());  // named in profiles
  return SwiGLUFn::apply(a, b); }

torch::Tensor fused_linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                         const torch::Tensor& labels, int64_t ignore_index, int64_t chunk_rows,
                                         GemmBackend backend) {
  RECORD_FUNCTION("tb::fused_linear_cross_entropy", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "fused_linear_cross_entropy: hidden [N, D] and weight [V, D] expected");
  TORCH_CHECK(labels.numel() == hidden.size(0), "fused_linear_cross_entropy: one label per row expected");
  return LinearCrossEntropyFn::apply(hidden, weight, labels.reshape({-1}), ignore_index, std::max<int64_t>(1, chunk_rows),
                                     static_cast<int64_t>(backend));
}

}  // namespace tb::compile
