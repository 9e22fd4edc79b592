#include "compile/fused_attention.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compile/element_access.h"
#include "compile/fast_exp.h"
#include "compile/fused_nf4.h"
#include "compile/gemm.h"

namespace tb::compile {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

torch::Tensor as_f32(const torch::Tensor& t) { return t.to(torch::kFloat).contiguous(); }

// ---- rotary ----------------------------------------------------------------------------------------------

// One head's row: pairs (x[2i], x[2i+1]) rotated by the angle with cos c[i], sin sign * s[i], in fp32.
template <typename T>
TB_MULTIVERSION void rotate_row(const T* x, const float* c, const float* s, T* y, int64_t half, float sign) {
  for (int64_t i = 0; i < half; ++i) {
    const float x0 = load(x[2 * i]), x1 = load(x[2 * i + 1]), si = sign * s[i];
    store(y[2 * i], x0 * c[i] - x1 * si);
    store(y[2 * i + 1], x1 * c[i] + x0 * si);
  }
}

// x [B, T, H, D] rotated by +angle (sign 1) or -angle (sign -1, the backward); fp32 and bf16 are read
// and written in place of their own dtype (other dtypes through fp32).
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, float sign) {
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), D = x.size(3), half = D / 2;
  const auto xr = x.scalar_type() == torch::kBFloat16 ? x.contiguous() : as_f32(x);
  const auto c = as_f32(cos), s = as_f32(sin);
  const bool per_batch = c.dim() == 3;
  auto y = torch::empty_like(xr);
  const float* cp = c.data_ptr<float>();
  const float* sp = s.data_ptr<float>();
  with_elements(xr.scalar_type(), [&](auto tag) {
    using E = decltype(tag);
    const E* xp = elements<E>(xr);
    E* yp = elements<E>(y);
    at::parallel_for(0, B * T, 16, [&](int64_t begin, int64_t end) {
      for (int64_t bt = begin; bt < end; ++bt) {
        const int64_t table_row = per_batch ? bt : bt % T;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t off = (bt * H + h) * D;
          rotate_row(xp + off, cp + table_row * half, sp + table_row * half, yp + off, half, sign);
        }
      }
    });
  });
  return y;
}

struct RotaryFn : torch::autograd::Function<RotaryFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return rotate(x, cos, sin, 1.0f).to(x.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    // A rotation's transpose is the rotation by the negative angle.
    return {rotate(grads[0], saved[0], saved[1], -1.0f).to(dtype), torch::Tensor(), torch::Tensor()};
  }
};

// ---- softmax bookkeeping of one score tile ---------------------------------------------------------------

// max(s[0..n)), in 16 lanes as fused_kernels' dot().
TB_MULTIVERSION
float row_max(const float* s, int64_t n) {
  float lanes[16];
  for (float& l : lanes) l = kNegInf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] = s[i + j] > lanes[j] ? s[i + j] : lanes[j];
  float mx = kNegInf;
  for (; i < n; ++i) mx = s[i] > mx ? s[i] : mx;
  for (float l : lanes) mx = l > mx ? l : mx;
  return mx;
}

// s[i] = e^(s[i] * scale - shift) for i < n; returns the sum.
TB_MULTIVERSION
float exp_and_sum(float* s, int64_t n, float scale, float shift) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      const float p = exp_clamped(s[i + j] * scale - shift);
      s[i + j] = p;
      lanes[j] += p;
    }
  float total = 0.f;
  for (; i < n; ++i) {
    s[i] = exp_clamped(s[i] * scale - shift);
    total += s[i];
  }
  for (float l : lanes) total += l;
  return total;
}

// dS = P * (dP - rowsum(dO * O)) * scale, in place over dp.
TB_MULTIVERSION
void softmax_backward_row(const float* p, float* dp, int64_t n, float row_dot, float scale) {
  for (int64_t i = 0; i < n; ++i) dp[i] = p[i] * (dp[i] - row_dot) * scale;
}

TB_MULTIVERSION
void scale_row(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

// Keys a query row of a tile may see: the tile's query rows start `offset` = i0 - j0 keys after its
// first key, so row r sees keys 0..r + offset of the tile.
int64_t visible_keys(int64_t r, int64_t offset, int64_t nk) { return std::min(nk, r + offset + 1); }

// ---- causal attention ------------------------------------------------------------------------------------

// A [n, D] view of rows start.. of head h of batch b; t4 is [B, heads, T, D] with a unit last stride.
torch::Tensor head_rows(const torch::Tensor& t4, int64_t b, int64_t h, int64_t start, int64_t n) {
  return t4.select(0, b).select(0, h).narrow(0, start, n);
}

torch::Tensor widened(const torch::Tensor& t) {
  auto f = t.detach().to(torch::kFloat);
  return f.stride(-1) == 1 ? f : f.contiguous();
}

struct CausalAttentionFn : torch::autograd::Function<CausalAttentionFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t block_rows, int64_t backend) {
    const auto be = static_cast<GemmBackend>(backend);
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), KV = k.size(1), G = H / KV;
    const int64_t block = std::max<int64_t>(1, std::min(block_rows, T));
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const auto qf = widened(q), kf = widened(k), vf = widened(v);
    auto out = torch::empty({B, T, H, D}, qf.options());  // [B, T, H, D]: rows of the output projection
    auto lse = torch::empty({B, H, T}, qf.options());
    const int64_t blocks = (T + block - 1) / block;
    float* outp = out.data_ptr<float>();
    float* lsep = lse.data_ptr<float>();
    at::parallel_for(0, B * H * blocks, 1, [&](int64_t begin, int64_t end) {
      auto scores = torch::empty({block * block}, qf.options());
      auto acc = torch::empty({block, D}, qf.options());
      std::vector<float> m(block), l(block);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / (H * blocks), h = task / blocks % H, i0 = task % blocks * block;
        const int64_t nq = std::min(block, T - i0);
        const auto qt = head_rows(qf, b, h, i0, nq);
        auto o = acc.narrow(0, 0, nq);
        o.zero_();
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.f);
        float* op = o.data_ptr<float>();
        // Key blocks up to the diagonal one; those above it see no key of this query block.
        for (int64_t j0 = 0; j0 < i0 + nq; j0 += block) {
          const int64_t nk = std::min(block, T - j0);
          auto s = scores.narrow(0, 0, nq * nk).view({nq, nk});
          gemm_into(s, qt, head_rows(kf, b, h / G, j0, nk).t(), false, be);
          float* sp = s.data_ptr<float>();
          for (int64_t r = 0; r < nq; ++r) {
            float* row = sp + r * nk;
            const int64_t seen = visible_keys(r, i0 - j0, nk);
            const float m_new = std::max(m[r], row_max(row, seen) * scale);  // scale > 0
            const float alpha = m[r] == kNegInf ? 0.f : std::exp(m[r] - m_new);
            l[r] = l[r] * alpha + exp_and_sum(row, seen, scale, m_new);
            std::fill(row + seen, row + nk, 0.f);
            m[r] = m_new;
            scale_row(op + r * D, D, alpha);
          }
          gemm_into(o, s, head_rows(vf, b, h / G, j0, nk), true, be);
        }
        for (int64_t r = 0; r < nq; ++r) {
          const float* src = op + r * D;
          float* dst = outp + ((b * T + i0 + r) * H + h) * D;
          const float inv = 1.0f / l[r];
          for (int64_t d = 0; d < D; ++d) dst[d] = src[d] * inv;
          lsep[(b * H + h) * T + i0 + r] = m[r] + std::log(l[r]);
        }
      }
    });
    const auto result = out.to(q.scalar_type());
    ctx->save_for_backward({q, k, v, result, lse});
    ctx->saved_data["block"] = block;
    ctx->saved_data["backend"] = backend;
    return result;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto qf = widened(saved[0]), kf = widened(saved[1]), vf = widened(saved[2]);
    const auto of = as_f32(saved[3]), lse = saved[4].contiguous();
    const int64_t block = ctx->saved_data["block"].toInt();
    const auto be = static_cast<GemmBackend>(ctx->saved_data["backend"].toInt());
    const int64_t B = qf.size(0), H = qf.size(1), T = qf.size(2), D = qf.size(3), KV = kf.size(1), G = H / KV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const auto dout = as_f32(grads[0]);                           // [B, T, H, D]
    const auto row_dot = (dout * of).sum(-1).contiguous();        // [B, T, H]: rowsum(dO * O)
    const auto dout4 = dout.transpose(1, 2);                      // [B, H, T, D] view
    // Gradients in the [B, T, heads, D] layout of the projections they flow back to.
    auto dq = torch::zeros({B, T, H, D}, qf.options());
    auto dk = torch::zeros({B, T, KV, D}, qf.options());
    auto dv = torch::zeros({B, T, KV, D}, qf.options());
    const auto dq4 = dq.transpose(1, 2), dk4 = dk.transpose(1, 2), dv4 = dv.transpose(1, 2);
    const float* lsep = lse.data_ptr<float>();
    const float* dotp = row_dot.data_ptr<float>();
    // One task per (batch, kv head): it alone writes that kv head's dk/dv and its q heads' dq.
    at::parallel_for(0, B * KV, 1, [&](int64_t begin, int64_t end) {
      auto probs = torch::empty({block * block}, qf.options());
      auto dprobs = torch::empty({block * block}, qf.options());
      auto dk_acc = torch::empty({block, D}, qf.options());
      auto dv_acc = torch::empty({block, D}, qf.options());
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / KV, kvh = task % KV;
        for (int64_t j0 = 0; j0 < T; j0 += block) {
          const int64_t nk = std::min(block, T - j0);
          const auto kt = head_rows(kf, b, kvh, j0, nk), vt = head_rows(vf, b, kvh, j0, nk);
          auto dkt = dk_acc.narrow(0, 0, nk), dvt = dv_acc.narrow(0, 0, nk);
          dkt.zero_();
          dvt.zero_();
          for (int64_t h = kvh * G; h < (kvh + 1) * G; ++h) {
            // Query blocks from the diagonal one down; those above see none of these keys.
            for (int64_t i0 = j0; i0 < T; i0 += block) {
              const int64_t nq = std::min(block, T - i0);
              const auto qt = head_rows(qf, b, h, i0, nq), dot = head_rows(dout4, b, h, i0, nq);
              auto p = probs.narrow(0, 0, nq * nk).view({nq, nk});
              auto dp = dprobs.narrow(0, 0, nq * nk).view({nq, nk});
              gemm_into(p, qt, kt.t(), false, be);
              gemm_into(dp, dot, vt.t(), false, be);
              float* pp = p.data_ptr<float>();
              float* dpp = dp.data_ptr<float>();
              for (int64_t r = 0; r < nq; ++r) {
                const int64_t seen = visible_keys(r, i0 - j0, nk);
                const int64_t t = i0 + r;
                exp_and_sum(pp + r * nk, seen, scale, lsep[(b * H + h) * T + t]);
                std::fill(pp + r * nk + seen, pp + (r + 1) * nk, 0.f);
                softmax_backward_row(pp + r * nk, dpp + r * nk, nk, dotp[(b * T + t) * H + h], scale);
              }
              gemm_into(dvt, p.t(), dot, true, be);
              auto dqt = head_rows(dq4, b, h, i0, nq);
              gemm_into(dqt, dp, kt, true, be);
              gemm_into(dkt, dp.t(), qt, true, be);
            }
          }
          head_rows(dk4, b, kvh, j0, nk).copy_(dkt);
          head_rows(dv4, b, kvh, j0, nk).copy_(dvt);
        }
      }
    });
    const auto dtype = saved[0].scalar_type();
    return {dq4.to(dtype), dk4.to(dtype), dv4.to(dtype), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  RECORD_FUNCTION("tb::fused_rotary", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(x.dim() == 4 && x.size(3) % 2 == 0, "fused_rotary: x [B, T, H, D] with an even D expected");
  TORCH_CHECK(cos.size(-1) == x.size(3) / 2 && cos.size(-2) == x.size(1), "fused_rotary: cos/sin [T, D/2] expected");
  TORCH_CHECK(cos.dim() == 2 || (cos.dim() == 3 && cos.size(0) == x.size(0)), "fused_rotary: cos/sin [T, D/2] or [B, T, D/2]");
  return RotaryFn::apply(x, cos, sin);
}

torch::Tensor fused_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     int64_t block, GemmBackend backend) {
  RECORD_FUNCTION("tb::fused_causal_attention", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.sizes() == k.sizes(), "fused_causal_attention: q [B, H, T, D], k/v [B, KV, T, D]");
  TORCH_CHECK(k.size(0) == q.size(0) && k.size(2) == q.size(2) && k.size(3) == q.size(3),
              "fused_causal_attention: k/v must match q in batch, length and head size");
  TORCH_CHECK(q.size(1) % k.size(1) == 0, "fused_causal_attention: query heads not a multiple of kv heads");
  return CausalAttentionFn::apply(q, k, v, std::max<int64_t>(1, block), static_cast<int64_t>(backend));
}

std::vector<torch::Tensor> attention_saved_tensors(const torch::Tensor& output) {
  const auto node = std::dynamic_pointer_cast<torch::autograd::CppNode<CausalAttentionFn>>(output.grad_fn());
  if (!node) return {};
  auto saved = node->ctx_.get_saved_variables();
  for (const auto& item : node->ctx_.saved_data)
    if (item.second.isTensor()) saved.push_back(item.second.toTensor());
  return saved;
}

bool is_plain_causal(const models::PositionInfo& pos, int64_t seq_len) {
  const auto& m = pos.blocked;
  if (pos.input_pos.defined() || pos.kv_len != seq_len || !m.defined() || m.dim() != 2) return false;
  if (m.size(0) != seq_len || m.size(1) != seq_len || m.scalar_type() != torch::kBool || !m.device().is_cpu())
    return false;
  const auto mc = m.contiguous();
  const bool* p = mc.data_ptr<bool>();
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j)
      if (p[i * seq_len + j] != (j > i)) return false;
  return true;
}

torch::Tensor compiled_attention(models::MultiHeadAttentionImpl& attn, const torch::Tensor& x,
                                 const models::PositionInfo& pos, int64_t block, GemmBackend backend) {
  const int64_t B = x.size(0), T = x.size(1);
  if (!x.device().is_cpu() || !is_plain_causal(pos, T)) return attn.forward(x, pos);
  const int64_t H = attn.dims.num_heads, KV = attn.dims.num_kv_heads, D = attn.dims.head_dim;
  // q, k, v stay in the projections' [B, T, heads, D] layout; the kernels read them as [B, heads, T, D].
  const auto q = fused_rotary(project(attn.q_proj, x, backend).reshape({B, T, H, D}), pos.cos, pos.sin);
  const auto k = fused_rotary(project(attn.k_proj, x, backend).reshape({B, T, KV, D}), pos.cos, pos.sin);
  const auto v = project(attn.v_proj, x, backend).reshape({B, T, KV, D});
  const auto out = fused_causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block, backend);
  return project(attn.output_proj, out.view({B, T, H * D}), backend);
}

}  // namespace tb::compile
