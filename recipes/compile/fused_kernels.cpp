#include "compile/fused_kernels.h"

#include "compile/fast_exp.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>

#include <c10/util/BFloat16.h>

#include <cmath>
#include <vector>

namespace tb::compile {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

#define TB_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))

// ---- row loops (fp32) ----------------------------------------------------------------------------------

// sum(a[i] * b[i]) in 16 independent lanes, so the loop vectorises without reassociation flags.
TB_MULTIVERSION
float dot(const float* a, const float* b, int64_t n) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += a[i + j] * b[i + j];
  float total = 0.f;
  for (; i < n; ++i) total += a[i] * b[i];
  for (int j = 0; j < 16; ++j) total += lanes[j];
  return total;
}

TB_MULTIVERSION
float rms_norm_row(const float* x, const float* scale, float* y, int64_t d, float eps) {
  const float ss = dot(x, x, d);
  const float rstd = 1.0f / std::sqrt(ss / float(d) + eps);
  for (int64_t i = 0; i < d; ++i) y[i] = x[i] * rstd * scale[i];
  return rstd;
}

// dx = rstd * (g * scale) - x * rstd^3 * mean(g * scale * x); dscale += g * x * rstd.
TB_MULTIVERSION
void rms_norm_backward_row(const float* x, const float* scale, const float* g, float rstd, float* dx,
                           float* dscale, int64_t d) {
  float gx = 0.f;  // sum(g * scale * x), in lanes as dot() does
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += g[i + j] * scale[i + j] * x[i + j];
  for (; i < d; ++i) gx += g[i] * scale[i] * x[i];
  for (int j = 0; j < 16; ++j) gx += lanes[j];
  const float k = rstd * rstd * rstd * gx / float(d);
  for (i = 0; i < d; ++i) {
    dx[i] = rstd * g[i] * scale[i] - x[i] * k;
    dscale[i] += g[i] * x[i] * rstd;
  }
}

// h = x + r (rounded to bf16 when `round_bf16`), then y = rms_norm(h) * scale; returns rstd.
TB_MULTIVERSION
float add_rms_norm_row(const float* x, const float* r, const float* scale, float* h, float* y, int64_t d, float eps,
                       bool round_bf16) {
  for (int64_t i = 0; i < d; ++i) h[i] = x[i] + r[i];
  if (round_bf16)
    for (int64_t i = 0; i < d; ++i) h[i] = static_cast<float>(c10::BFloat16(h[i]));
  return rms_norm_row(h, scale, y, d, eps);
}

TB_MULTIVERSION
void swiglu_span(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

TB_MULTIVERSION
void swiglu_backward_span(const float* a, const float* b, const float* g, float* da, float* db, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-a[i]));
    da[i] = g[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
    db[i] = g[i] * a[i] * s;
  }
}

torch::Tensor as_f32(const torch::Tensor& t) { return t.to(torch::kFloat).contiguous(); }

// ---- RMSNorm ---------------------------------------------------------------------------------------------

struct RMSNormFn : torch::autograd::Function<RMSNormFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& scale, double eps) {
    const int64_t d = x.size(-1);
    const auto xf = as_f32(x).view({-1, d});
    const auto sf = as_f32(scale);
    auto y = torch::empty_like(xf);
    auto rstd = torch::empty({xf.size(0)}, xf.options());
    const float* xp = xf.data_ptr<float>();
    const float* sp = sf.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* rp = rstd.data_ptr<float>();
    at::parallel_for(0, xf.size(0), 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) rp[r] = rms_norm_row(xp + r * d, sp, yp + r * d, d, float(eps));
    });
    ctx->save_for_backward({x, scale, rstd});
    return y.view(x.sizes()).to(x.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& scale = saved[1];
    const auto& rstd = saved[2];
    const int64_t d = x.size(-1);
    const auto xf = as_f32(x).view({-1, d});
    const auto sf = as_f32(scale);
    const auto gf = as_f32(grads[0]).view({-1, d});
    auto dx = torch::empty_like(xf);
    const int64_t rows = xf.size(0);
    // One partial dscale per thread, summed at the end (no atomics, deterministic for a thread count).
    const int threads = at::get_num_threads();
    auto partial = torch::zeros({threads, d}, xf.options());
    const float* xp = xf.data_ptr<float>();
    const float* sp = sf.data_ptr<float>();
    const float* gp = gf.data_ptr<float>();
    const float* rp = rstd.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    float* pp = partial.data_ptr<float>();
    const int64_t per_thread = (rows + threads - 1) / threads;
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        for (int64_t r = t * per_thread; r < std::min(rows, (t + 1) * per_thread); ++r)
          rms_norm_backward_row(xp + r * d, sp, gp + r * d, rp[r], dxp + r * d, pp + t * d, d);
    });
    return {dx.view(x.sizes()).to(x.scalar_type()), partial.sum(0).to(scale.scalar_type()), torch::Tensor()};
  }
};

// ---- residual add + RMSNorm ------------------------------------------------------------------------------

struct AddRMSNormFn : torch::autograd::Function<AddRMSNormFn> {
  static tensor_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& r,
                             const torch::Tensor& scale, double eps) {
    const int64_t d = x.size(-1);
    const auto xf = as_f32(x).view({-1, d});
    const auto rf = as_f32(r).view({-1, d});
    const auto sf = as_f32(scale);
    auto h = torch::empty_like(xf), y = torch::empty_like(xf);
    auto rstd = torch::empty({xf.size(0)}, xf.options());
    const bool round_bf16 = x.scalar_type() == torch::kBFloat16;
    const float* xp = xf.data_ptr<float>();
    const float* rp = rf.data_ptr<float>();
    const float* sp = sf.data_ptr<float>();
    float* hp = h.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* stdp = rstd.data_ptr<float>();
    at::parallel_for(0, xf.size(0), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        stdp[i] = add_rms_norm_row(xp + i * d, rp + i * d, sp, hp + i * d, yp + i * d, d, float(eps), round_bf16);
    });
    auto h_out = h.view(x.sizes()).to(x.scalar_type());
    ctx->save_for_backward({h_out, scale, rstd});
    return {h_out, y.view(x.sizes()).to(x.scalar_type())};
  }

  // dh = gh + RMSNorm's backward of gn; x and r both get dh.
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& h = saved[0];
    const auto& scale = saved[1];
    const auto& rstd = saved[2];
    const int64_t d = h.size(-1);
    const auto hf = as_f32(h).view({-1, d});
    const auto sf = as_f32(scale);
    const int64_t rows = hf.size(0);
    const auto gh = grads[0].defined() ? as_f32(grads[0]).view({-1, d}) : torch::zeros_like(hf);
    if (!grads[1].defined())
      return {gh.view(h.sizes()).to(h.scalar_type()), gh.view(h.sizes()).to(h.scalar_type()),
              torch::zeros_like(scale), torch::Tensor()};
    const auto gn = as_f32(grads[1]).view({-1, d});
    auto dh = torch::empty_like(hf);
    const int threads = at::get_num_threads();
    auto partial = torch::zeros({threads, d}, hf.options());  // per-thread dscale, as RMSNormFn
    const float* hp = hf.data_ptr<float>();
    const float* sp = sf.data_ptr<float>();
    const float* gnp = gn.data_ptr<float>();
    const float* ghp = gh.data_ptr<float>();
    const float* stdp = rstd.data_ptr<float>();
    float* dhp = dh.data_ptr<float>();
    float* pp = partial.data_ptr<float>();
    const int64_t per_thread = (rows + threads - 1) / threads;
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        for (int64_t i = t * per_thread; i < std::min(rows, (t + 1) * per_thread); ++i) {
          rms_norm_backward_row(hp + i * d, sp, gnp + i * d, stdp[i], dhp + i * d, pp + t * d, d);
          for (int64_t j = 0; j < d; ++j) dhp[i * d + j] += ghp[i * d + j];
        }
    });
    const auto dx = dh.view(h.sizes()).to(h.scalar_type());
    return {dx, dx, partial.sum(0).to(scale.scalar_type()), torch::Tensor()};
  }
};

// ---- SwiGLU ----------------------------------------------------------------------------------------------

struct SwiGLUFn : torch::autograd::Function<SwiGLUFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b) {
    const auto af = as_f32(a), bf = as_f32(b);
    auto y = torch::empty_like(af);
    const float* ap = af.data_ptr<float>();
    const float* bp = bf.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, af.numel(), 4096, [&](int64_t begin, int64_t end) {
      swiglu_span(ap + begin, bp + begin, yp + begin, end - begin);
    });
    ctx->save_for_backward({a, b});
    return y.to(a.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto af = as_f32(saved[0]), bf = as_f32(saved[1]);
    const auto gf = as_f32(grads[0]);
    auto da = torch::empty_like(af), db = torch::empty_like(bf);
    const float* ap = af.data_ptr<float>();
    const float* bp = bf.data_ptr<float>();
    const float* gp = gf.data_ptr<float>();
    float* dap = da.data_ptr<float>();
    float* dbp = db.data_ptr<float>();
    at::parallel_for(0, af.numel(), 4096, [&](int64_t begin, int64_t end) {
      swiglu_backward_span(ap + begin, bp + begin, gp + begin, dap + begin, dbp + begin, end - begin);
    });
    return {da.to(saved[0].scalar_type()), db.to(saved[1].scalar_type())};
  }
};

// ---- output projection + cross entropy -------------------------------------------------------------------

// max(x[0..n)), in 16 lanes.
TB_MULTIVERSION
float max_of(const float* x, int64_t n) {
  float lanes[16];
  for (float& l : lanes) l = -INFINITY;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  float m = -INFINITY;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (float l : lanes) m = l > m ? l : m;
  return m;
}

// x[i] = e^(x[i] - shift) for i < n; returns the sum.
TB_MULTIVERSION
float exp_in_place(float* x, int64_t n, float shift) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      x[i + j] = exp_shifted(x[i + j] - shift);
      lanes[j] += x[i + j];
    }
  float total = 0.f;
  for (; i < n; ++i) {
    x[i] = exp_shifted(x[i] - shift);
    total += x[i];
  }
  for (float l : lanes) total += l;
  return total;
}

TB_MULTIVERSION
void scale_in_place(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

// One row of logits: returns logsumexp(row) - row[label] and, when `grad`, leaves in the row the loss's
// gradient softmax(row) - onehot(label). The row is read from L2 three times instead of streaming the
// chunk through memory once per eager op (logsumexp, gather, sub, exp, mul, scatter).
float cross_entropy_row(float* row, int64_t vocab, int64_t label, bool grad) {
  const float target = row[label];
  const float m = max_of(row, vocab);
  const float sum = exp_in_place(row, vocab, m);
  if (grad) {
    scale_in_place(row, vocab, 1.0f / sum);
    row[label] -= 1.0f;
  }
  return m + std::log(sum) - target;
}


struct LinearCrossEntropyFn : torch::autograd::Function<LinearCrossEntropyFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& labels, int64_t ignore_index, int64_t chunk_rows,
                               int64_t backend) {
    const auto be = static_cast<GemmBackend>(backend);
    const int64_t n = hidden.size(0);
    const bool grad_h = hidden.requires_grad(), grad_w = weight.requires_grad();
    const bool reduced = hidden.scalar_type() != torch::kFloat;
    // In reduced precision the softmax and the gradient sums stay fp32, as the eager loss keeps them.
    // oneDNN multiplies bf16 by bf16 into fp32 sums, so the logits' gradient is rounded to bf16 for its
    // two products (as eager's bf16 logits gradient is); ATen's products take fp32 copies instead.
    const bool bf16_products = reduced && be == GemmBackend::onednn && onednn_available();
    const auto w32 = reduced && !bf16_products ? weight.to(torch::kFloat) : weight;
    torch::Tensor dh = grad_h ? torch::empty({n, hidden.size(1)}, hidden.options().dtype(torch::kFloat)) : torch::Tensor();
    torch::Tensor dw = grad_w ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat)) : torch::Tensor();
    const int64_t vocab = weight.size(0);
    const bool grads = grad_h || grad_w;
    const auto label_values = labels.to(torch::kLong).contiguous();
    const int64_t* lbl = label_values.data_ptr<int64_t>();
    for (int64_t r = 0; r < n; ++r)
      TORCH_CHECK(lbl[r] == ignore_index || (lbl[r] >= 0 && lbl[r] < vocab), "fused_linear_cross_entropy: label ",
                  lbl[r], " of row ", r, " is outside the vocabulary [0, ", vocab, ")");
    std::vector<float> row_loss(n);
    for (int64_t s = 0; s < n; s += chunk_rows) {
      const int64_t e = std::min(n, s + chunk_rows);
      const auto h = hidden.slice(0, s, e);
      auto p = gemm(h, weight.t(), torch::kFloat, be);  // [rows, V] logits, the only ones alive
      // Row by row: the loss term, and d loss / d logits = softmax - onehot(label) in place (zero on
      // ignored rows).
      float* rows = p.data_ptr<float>();
      at::parallel_for(0, e - s, 8, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          float* row = rows + r * vocab;
          const int64_t label = lbl[s + r];
          if (label == ignore_index) {
            if (grads) std::fill(row, row + vocab, 0.f);
            row_loss[s + r] = 0.f;
          } else {
            row_loss[s + r] = cross_entropy_row(row, vocab, label, grads);
          }
        }
      });
      if (!grads) continue;
      const auto pg = bf16_products ? p.to(hidden.scalar_type()) : p;
      const auto hg = reduced && !bf16_products ? h.to(torch::kFloat) : h;
      if (grad_h) gemm_into(dh.slice(0, s, e), pg, w32, false, be);
      if (grad_w) gemm_into(dw, pg.t(), hg, true, be);
    }
    double total = 0;  // summed in row order, whatever the thread split
    for (float l : row_loss) total += l;
    ctx->saved_data["dh"] = dh;
    ctx->saved_data["dw"] = dw;
    ctx->saved_data["h_dtype"] = static_cast<int64_t>(hidden.scalar_type());
    return torch::scalar_tensor(total, torch::kFloat);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto g = grads[0];
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["h_dtype"].toInt());
    const auto dh = ctx->saved_data["dh"].toTensor();
    const auto dw = ctx->saved_data["dw"].toTensor();
    return {dh.defined() ? (dh * g).to(dtype) : torch::Tensor(), dw.defined() ? (dw * g).to(dtype) : torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
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
  return RMSNormFn::apply(x, scale, eps);
}

std::pair<torch::Tensor, torch::Tensor> fused_add_rms_norm(const torch::Tensor& x, const torch::Tensor& r,
                                                           const torch::Tensor& scale, double eps) {
  TORCH_CHECK(x.sizes() == r.sizes() && x.scalar_type() == r.scalar_type(), "fused_add_rms_norm: x and r must match");
  auto out = AddRMSNormFn::apply(x, r, scale, eps);
  return {out[0], out[1]};
}

torch::Tensor fused_swiglu(const torch::Tensor& a, const torch::Tensor& b) { return SwiGLUFn::apply(a, b); }

torch::Tensor fused_linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                         const torch::Tensor& labels, int64_t ignore_index, int64_t chunk_rows,
                                         GemmBackend backend) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "fused_linear_cross_entropy: hidden [N, D] and weight [V, D] expected");
  TORCH_CHECK(labels.numel() == hidden.size(0), "fused_linear_cross_entropy: one label per row expected");
  return LinearCrossEntropyFn::apply(hidden, weight, labels.reshape({-1}), ignore_index, std::max<int64_t>(1, chunk_rows),
                                     static_cast<int64_t>(backend));
}

}  // namespace tb::compile
