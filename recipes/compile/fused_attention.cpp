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

// One position's heads (`heads` rows of 2 * half values): pairs (x[2i], x[2i+1]) of each rotated by the
// angle with cos c[i], sin sign * s[i], in fp32.
template <typename T>
TB_MULTIVERSION void rotate_heads(const T* x, const float* c, const float* s, T* y, int64_t heads, int64_t half,
                                  float sign) {
  for (int64_t h = 0; h < heads; ++h, x += 2 * half, y += 2 * half)
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
        rotate_heads(xp + bt * H * D, cp + table_row * half, sp + table_row * half, yp + bt * H * D, H, half, sign);
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

// max(s[0..n)).
TB_MULTIVERSION float row_max(const float* s, int64_t n) { return max_of(s, n); }

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
// first key, so row r sees keys 0..r + offset of the tile (none when that is negative).
int64_t visible_keys(int64_t r, int64_t offset, int64_t nk) { return std::clamp<int64_t>(r + offset + 1, 0, nk); }

// The first of those keys with a sliding window (query t sees keys t - window < j <= t; 0: no window).
int64_t first_visible_key(int64_t r, int64_t offset, int64_t window, int64_t seen) {
  return window > 0 ? std::clamp<int64_t>(r + offset - window + 1, 0, seen) : 0;
}

// out[i] = x[i] stored in E (the bf16 copy of a probability or score-gradient row for its products).
template <typename E>
TB_MULTIVERSION void store_row(const float* x, E* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store(out[i], x[i]);
}

// out[i] = rowsum(a_i * b_i) over rows of n values (the backward's rowsum(dO * O)).
template <typename E>
TB_MULTIVERSION void row_dots(const E* a, const E* b, float* out, int64_t begin, int64_t end, int64_t n) {
  for (int64_t i = begin; i < end; ++i) out[i] = dot(a + i * n, b + i * n, n);
}

// ---- causal attention ------------------------------------------------------------------------------------

// Keys per score tile: a whole row of the training lengths (T <= 512) in one product, so the online
// softmax rarely rescales and each query tile makes two products forward; a [128, 512] fp32 tile of
// scores and one of their gradients stay within a core's L2.
constexpr int64_t kKeyTile = 512;

// A [B, heads, T, D] tensor with a unit last stride, as the tile products address it.
struct Heads {
  char* data;
  int64_t batch_stride, head_stride, row_stride, D;
  torch::ScalarType dtype;
  // Rows start..start + n of head h of batch b: an [n, D] matrix.
  MatrixView rows(int64_t b, int64_t h, int64_t start, int64_t n) const {
    const int64_t offset = b * batch_stride + h * head_stride + start * row_stride;
    return {data + offset * int64_t(c10::elementSize(dtype)), n, D, row_stride, 1, dtype};
  }
};

Heads heads_of(const torch::Tensor& t4) {
  TORCH_CHECK(t4.dim() == 4 && t4.stride(3) == 1, "fused_causal_attention: [B, heads, T, D] with a unit last stride");
  return {static_cast<char*>(t4.data_ptr()), t4.stride(0), t4.stride(1), t4.stride(2), t4.size(3), t4.scalar_type()};
}

MatrixView buffer_view(void* data, int64_t rows, int64_t cols, torch::ScalarType dtype) {
  return {data, rows, cols, cols, 1, dtype};
}

// The tile products read q, k, v (and dO) in their own dtype E: fp32, or bf16 with oneDNN (bf16 products
// summed in fp32, the probabilities and score gradients rounded to bf16 for theirs, as eager's bf16
// softmax output is). Softmax bookkeeping and every accumulator are fp32.
template <typename E>
constexpr torch::ScalarType dtype_of() {
  return std::is_same_v<E, float> ? torch::kFloat : torch::kBFloat16;
}

struct AttentionShape {
  int64_t B, H, KV, T, D, block;
  int64_t window = 0;  // a query sees the `window` keys up to itself; 0: all of them
  double score_scale = 0;  // what q k^T is multiplied by; 0: 1 / sqrt(D)
  int64_t groups() const { return H / KV; }
  int64_t blocks() const { return (T + block - 1) / block; }
  int64_t key_tile() const { return std::max(block, kKeyTile); }
  float scale() const { return score_scale > 0 ? float(score_scale) : 1.0f / std::sqrt(static_cast<float>(D)); }
};

// out [B, T, H, D] in E and lse [B, H, T] (fp32) from q [B, H, T, D], k/v [B, KV, T, D].
template <typename E>
void attention_forward(const Heads& q, const Heads& k, const Heads& v, E* out, float* lse, const AttentionShape& a,
                       GemmBackend be) {
  const int64_t G = a.groups(), blocks = a.blocks(), block = a.block, kt = a.key_tile(), D = a.D;
  const float scale = a.scale();
  constexpr bool kReduced = !std::is_same_v<E, float>;
  at::parallel_for(0, a.B * a.H * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(block * kt), acc(block * D), m(block), l(block);
    std::vector<E> probs(kReduced ? block * kt : 0);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (a.H * blocks), h = task / blocks % a.H, i0 = task % blocks * block;
      const int64_t nq = std::min(block, a.T - i0), visible_end = i0 + nq;
      std::fill(acc.begin(), acc.end(), 0.f);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.f);
      const MatrixView o = buffer_view(acc.data(), nq, D, torch::kFloat);
      // Key tiles up to the causal diagonal; keys past the tile's last query are seen by none, and with
      // a sliding window keys before its first query's window neither: those tiles are never computed.
      const int64_t first_key = a.window > 0 ? std::max<int64_t>(0, i0 - a.window + 1) : 0;
      for (int64_t j0 = first_key; j0 < visible_end; j0 += kt) {
        const int64_t nk = std::min(kt, visible_end - j0);
        const MatrixView s = buffer_view(scores.data(), nq, nk, torch::kFloat);
        gemm_into(s, q.rows(b, h, i0, nq), k.rows(b, h / G, j0, nk).t(), false, be);
        for (int64_t r = 0; r < nq; ++r) {
          float* row = scores.data() + r * nk;
          const int64_t seen = visible_keys(r, i0 - j0, nk);
          const int64_t from = first_visible_key(r, i0 - j0, a.window, seen);
          if (seen > from) {
            const float m_new = std::max(m[r], row_max(row + from, seen - from) * scale);  // scale > 0
            const float alpha = m[r] == kNegInf ? 0.f : std::exp(m[r] - m_new);
            l[r] = l[r] * alpha + exp_and_sum(row + from, seen - from, scale, m_new);
            m[r] = m_new;
            scale_row(acc.data() + r * D, D, alpha);
          }
          std::fill(row, row + from, 0.f);
          std::fill(row + seen, row + nk, 0.f);
          if constexpr (kReduced) store_row(row, probs.data() + r * nk, nk);
        }
        const MatrixView p = kReduced ? buffer_view(probs.data(), nq, nk, dtype_of<E>()) : s;
        gemm_into(o, p, v.rows(b, h / G, j0, nk), true, be);
      }
      for (int64_t r = 0; r < nq; ++r) {
        const float* src = acc.data() + r * D;
        E* dst = out + ((b * a.T + i0 + r) * a.H + h) * D;
        const float inv = 1.0f / l[r];
        for (int64_t d = 0; d < D; ++d) store(dst[d], src[d] * inv);
        lse[(b * a.H + h) * a.T + i0 + r] = m[r] + std::log(l[r]);
      }
    }
  });
}

// dq [B, T, H, D] (fp32, summed over key tiles), dk and dv [B, T, KV, D] (in E) from dO [B, H, T, D]
// (a view of [B, T, H, D]), the forward's lse and row_dot = rowsum(dO * O) [B, T, H].
template <typename E>
void attention_backward(const Heads& q, const Heads& k, const Heads& v, const Heads& dout, const float* lse,
                        const float* row_dot, float* dq, E* dk, E* dv, const AttentionShape& a, GemmBackend be) {
  const int64_t G = a.groups(), block = a.block, kt = a.key_tile(), D = a.D, T = a.T, H = a.H;
  const float scale = a.scale();
  constexpr bool kReduced = !std::is_same_v<E, float>;
  // One task per (batch, kv head): it alone writes that kv head's dk/dv and its q heads' dq.
  at::parallel_for(0, a.B * a.KV, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> probs(block * kt), dprobs(block * kt), dk_acc(kt * D), dv_acc(kt * D);
    std::vector<E> probs_e(kReduced ? block * kt : 0), dprobs_e(kReduced ? block * kt : 0);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / a.KV, kvh = task % a.KV;
      for (int64_t j0 = 0; j0 < T; j0 += kt) {
        const int64_t nk = std::min(kt, T - j0);
        std::fill(dk_acc.begin(), dk_acc.begin() + nk * D, 0.f);
        std::fill(dv_acc.begin(), dv_acc.begin() + nk * D, 0.f);
        for (int64_t h = kvh * G; h < (kvh + 1) * G; ++h) {
          // Query tiles from the one holding key j0 down; those above see none of these keys, and with a
          // sliding window neither do those past the tile's last key + window.
          const int64_t queries_end = a.window > 0 ? std::min(T, j0 + nk - 1 + a.window) : T;
          for (int64_t i0 = j0 / block * block; i0 < queries_end; i0 += block) {
            const int64_t nq = std::min(block, T - i0);
            const int64_t nkv = std::min(nk, i0 + nq - j0);  // keys of the tile its last query sees
            const MatrixView qt = q.rows(b, h, i0, nq), dot = dout.rows(b, h, i0, nq);
            const MatrixView kt_rows = k.rows(b, kvh, j0, nkv), vt_rows = v.rows(b, kvh, j0, nkv);
            const MatrixView p = buffer_view(probs.data(), nq, nkv, torch::kFloat);
            const MatrixView dp = buffer_view(dprobs.data(), nq, nkv, torch::kFloat);
            gemm_into(p, qt, kt_rows.t(), false, be);
            gemm_into(dp, dot, vt_rows.t(), false, be);
            for (int64_t r = 0; r < nq; ++r) {
              float* prow = probs.data() + r * nkv;
              float* dprow = dprobs.data() + r * nkv;
              const int64_t t = i0 + r, seen = visible_keys(r, i0 - j0, nkv);
              const int64_t from = first_visible_key(r, i0 - j0, a.window, seen);
              exp_and_sum(prow + from, seen - from, scale, lse[(b * H + h) * T + t]);
              std::fill(prow, prow + from, 0.f);
              std::fill(prow + seen, prow + nkv, 0.f);
              softmax_backward_row(prow, dprow, nkv, row_dot[(b * T + t) * H + h], scale);
              if constexpr (kReduced) {
                store_row(prow, probs_e.data() + r * nkv, nkv);
                store_row(dprow, dprobs_e.data() + r * nkv, nkv);
              }
            }
            const MatrixView pe = kReduced ? buffer_view(probs_e.data(), nq, nkv, dtype_of<E>()) : p;
            const MatrixView ds = kReduced ? buffer_view(dprobs_e.data(), nq, nkv, dtype_of<E>()) : dp;
            gemm_into(buffer_view(dv_acc.data(), nkv, D, torch::kFloat), pe.t(), dot, true, be);
            gemm_into(MatrixView{dq + ((b * T + i0) * H + h) * D, nq, D, H * D, 1, torch::kFloat}, ds, kt_rows, true, be);
            gemm_into(buffer_view(dk_acc.data(), nkv, D, torch::kFloat), ds.t(), qt, true, be);
          }
        }
        for (int64_t r = 0; r < nk; ++r) {
          E* dk_row = dk + ((b * T + j0 + r) * a.KV + kvh) * D;
          E* dv_row = dv + ((b * T + j0 + r) * a.KV + kvh) * D;
          for (int64_t d = 0; d < D; ++d) {
            store(dk_row[d], dk_acc[r * D + d]);
            store(dv_row[d], dv_acc[r * D + d]);
          }
        }
      }
    }
  });
}

// Whether the tile products read this dtype as it is (fp32 always, bf16 through oneDNN); otherwise the
// kernel runs on fp32 copies.
bool reads_in_place(torch::ScalarType dtype, GemmBackend be) {
  return dtype == torch::kFloat || (dtype == torch::kBFloat16 && be == GemmBackend::onednn && onednn_available());
}

// q, k or v as the kernel reads it: in its dtype or widened to fp32, with a unit last stride.
torch::Tensor operand(const torch::Tensor& t, bool in_place) {
  auto e = in_place ? t.detach() : t.detach().to(torch::kFloat);
  return e.stride(-1) == 1 ? e : e.contiguous();
}

struct CausalAttentionFn : torch::autograd::Function<CausalAttentionFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t block_rows, int64_t backend, int64_t window,
                               double scale) {
    const auto be = static_cast<GemmBackend>(backend);
    const AttentionShape a{q.size(0), q.size(1), k.size(1), q.size(2), q.size(3),
                           std::max<int64_t>(1, std::min(block_rows, q.size(2))), window, scale};
    const bool in_place = reads_in_place(q.scalar_type(), be);
    const auto qe = operand(q, in_place), ke = operand(k, in_place), ve = operand(v, in_place);
    // [B, T, H, D]: rows of the output projection.
    auto out = torch::empty({a.B, a.T, a.H, a.D}, qe.options());
    auto lse = torch::empty({a.B, a.H, a.T}, q.options().dtype(torch::kFloat));
    with_elements(qe.scalar_type(), [&](auto tag) {
      using E = decltype(tag);
      attention_forward<E>(heads_of(qe), heads_of(ke), heads_of(ve), elements<E>(out), lse.data_ptr<float>(), a, be);
    });
    const auto result = out.to(q.scalar_type());
    ctx->save_for_backward({q, k, v, result, lse});
    ctx->saved_data["block"] = a.block;
    ctx->saved_data["backend"] = backend;
    ctx->saved_data["window"] = window;
    ctx->saved_data["scale"] = scale;
    return result;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& q = saved[0];
    const auto be = static_cast<GemmBackend>(ctx->saved_data["backend"].toInt());
    const AttentionShape a{q.size(0), q.size(1), saved[1].size(1), q.size(2), q.size(3), ctx->saved_data["block"].toInt(),
                           ctx->saved_data["window"].toInt(), ctx->saved_data["scale"].toDouble()};
    const bool in_place = reads_in_place(q.scalar_type(), be);
    auto read = [&](const torch::Tensor& t) { return operand(t, in_place).contiguous(); };
    const auto qe = operand(q, in_place), ke = operand(saved[1], in_place), ve = operand(saved[2], in_place);
    const auto oe = read(saved[3]), dout = read(grads[0]);  // [B, T, H, D]
    const auto lse = saved[4].contiguous();
    const auto dtype = qe.scalar_type();
    auto row_dot = torch::empty({a.B, a.T, a.H}, lse.options());  // rowsum(dO * O)
    // Gradients in the [B, T, heads, D] layout of the projections they flow back to.
    auto dq = torch::zeros({a.B, a.T, a.H, a.D}, lse.options());
    auto dk = torch::empty({a.B, a.T, a.KV, a.D}, qe.options());
    auto dv = torch::empty({a.B, a.T, a.KV, a.D}, qe.options());
    with_elements(dtype, [&](auto tag) {
      using E = decltype(tag);
      const E* dop = elements<E>(dout);
      const E* op = elements<E>(oe);
      float* dotp = row_dot.data_ptr<float>();
      at::parallel_for(0, row_dot.numel(), 256, [&](int64_t begin, int64_t end) {
        row_dots(dop, op, dotp, begin, end, a.D);
      });
      attention_backward<E>(heads_of(qe), heads_of(ke), heads_of(ve), heads_of(dout.transpose(1, 2)),
                            lse.data_ptr<float>(), dotp, dq.data_ptr<float>(), elements<E>(dk), elements<E>(dv), a,
                            be);
    });
    const auto out_dtype = q.scalar_type();
    return {dq.transpose(1, 2).to(out_dtype), dk.transpose(1, 2).to(out_dtype), dv.transpose(1, 2).to(out_dtype),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
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
                                     int64_t block, GemmBackend backend, int64_t window, double scale) {
  RECORD_FUNCTION("tb::fused_causal_attention", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.sizes() == k.sizes(), "fused_causal_attention: q [B, H, T, D], k/v [B, KV, T, D]");
  TORCH_CHECK(k.size(0) == q.size(0) && k.size(2) == q.size(2) && k.size(3) == q.size(3),
              "fused_causal_attention: k/v must match q in batch, length and head size");
  TORCH_CHECK(q.size(1) % k.size(1) == 0, "fused_causal_attention: query heads not a multiple of kv heads");
  TORCH_CHECK(window >= 0, "fused_causal_attention: a negative window");
  TORCH_CHECK(scale >= 0, "fused_causal_attention: a negative scale");
  return CausalAttentionFn::apply(q, k, v, std::max<int64_t>(1, block), static_cast<int64_t>(backend), window, scale);
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
  const auto& dims = attn.dims;
  const int64_t H = dims.num_heads, KV = dims.num_kv_heads, D = dims.head_dim;
  // q, k, v in the projections' [B, T, heads, D] layout; the kernels read them as [B, heads, T, D].
  torch::Tensor q, k, v;
  if (attn.fused()) {
    const auto qkv = project(attn.qkv_proj, x, backend);
    q = qkv.narrow(-1, 0, H * D).view({B, T, H, D});
    k = qkv.narrow(-1, H * D, KV * D).view({B, T, KV, D});
    v = qkv.narrow(-1, (H + KV) * D, KV * D).view({B, T, KV, D});
  } else {
    q = project(attn.q_proj, x, backend).reshape({B, T, H, D});
    k = project(attn.k_proj, x, backend).reshape({B, T, KV, D});
    v = project(attn.v_proj, x, backend).reshape({B, T, KV, D});
  }
  // Pieces no kernel covers run as their eager ops: q/k norms, a partial rotary, soft-capping.
  if (attn.q_norm) {
    q = attn.q_norm->forward(q);
    k = attn.k_norm->forward(k);
  }
  const bool local = dims.sliding && pos.cos_local.defined();
  const auto& cos = local ? pos.cos_local : pos.cos;
  const auto& sin = local ? pos.sin_local : pos.sin;
  if (2 * cos.size(-1) == D) {
    q = fused_rotary(q, cos, sin);
    k = fused_rotary(k, cos, sin);
  } else {
    q = models::apply_rotary(q.transpose(1, 2), cos, sin).transpose(1, 2);
    k = models::apply_rotary(k.transpose(1, 2), cos, sin).transpose(1, 2);
  }
  const double scale = dims.scale > 0 ? dims.scale : 1.0 / std::sqrt(static_cast<double>(D));
  // A sliding layer's window skips the key tiles before it; one at least as long as the sequence hides none.
  const int64_t window = dims.sliding && dims.window < T ? dims.window : 0;
  torch::Tensor out;
  if (dims.softcap == 0) {
    out = fused_causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block, backend, window, scale);
  } else {
    const auto& blocked = window > 0 && pos.blocked_sliding.defined() ? pos.blocked_sliding : pos.blocked;
    out = models::grouped_query_attention(q.transpose(1, 2), k.transpose(1, 2).contiguous(),
                                          v.transpose(1, 2).contiguous(), blocked, scale, dims.softcap)
              .transpose(1, 2);
  }
  return project(attn.output_proj, out.reshape({B, T, H * D}), backend);
}

}  // namespace tb::compile
