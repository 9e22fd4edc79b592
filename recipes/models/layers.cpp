#include "models/layers.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tb::models {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_, bool offset_) : eps(eps_), offset(offset_) {
  scale = register_parameter("scale", offset ? torch::zeros({dim}) : torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  const auto xf = x.to(torch::kFloat);  // no copy when x is already fp32
  const auto inv_rms = torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  // Gemma multiplies by (1 + w) in fp32 and rounds once; Llama rounds the normalised x, then scales.
  if (offset) return (xf * inv_rms * (scale.to(torch::kFloat) + 1.0)).to(x.scalar_type());
  return (xf * inv_rms).to(x.scalar_type()) * scale;
}

std::vector<double> rope_inverse_frequencies(int64_t rotary_dim, double base, const std::optional<RopeScaling>& scaling) {
  std::vector<double> freqs(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < freqs.size(); ++i)
    freqs[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
  if (!scaling) return freqs;
  if (scaling->type == RopeType::linear) {
    for (double& f : freqs) f /= scaling->scale_factor;
    return freqs;
  }
  if (scaling->type == RopeType::longrope) {
    for (size_t i = 0; i < freqs.size() && i < scaling->short_factor.size(); ++i) freqs[i] /= scaling->short_factor[i];
    return freqs;
  }
  const double pi = 3.14159265358979323846;
  const double low_freq_wavelen = static_cast<double>(scaling->old_context_len) / scaling->low_freq_factor;
  const double high_freq_wavelen = static_cast<double>(scaling->old_context_len) / scaling->high_freq_factor;
  for (double& f : freqs) {
    const double wavelen = 2 * pi / f;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies: unchanged
    if (wavelen > low_freq_wavelen) {           // low frequencies: interpolated
      f /= scaling->scale_factor;
      continue;
    }
    const double smooth = (static_cast<double>(scaling->old_context_len) / wavelen - scaling->low_freq_factor) /
                          (scaling->high_freq_factor - scaling->low_freq_factor);
    f = (1 - smooth) * f / scaling->scale_factor + smooth * f;
  }
  return freqs;
}

RotaryTables::RotaryTables(int64_t rotary_dim, double base, std::optional<RopeScaling> scaling, int64_t max_seq_len)
    : inv_freq_(rope_inverse_frequencies(rotary_dim, base, scaling)),
      attention_factor_(scaling && scaling->type == RopeType::longrope ? scaling->attention_factor : 1.0),
      max_seq_len_(max_seq_len) {}

void RotaryTables::ensure(int64_t len, const torch::Device& device) {
  if (len > max_seq_len_)
    throw std::invalid_argument("sequence of " + std::to_string(len) + " positions exceeds the model's max_seq_len " +
                                std::to_string(max_seq_len_));
  if (cos_.defined() && cached_len_ >= len && cos_.device() == device) return;
  const int64_t n = std::min(max_seq_len_, std::max(len, 2 * cached_len_));
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  const auto inv = torch::from_blob(inv_freq_.data(), {static_cast<int64_t>(inv_freq_.size())}, f64);
  // Angles in double precision: pos * theta stays exact to fp32 rounding even at 128k positions.
  const auto angles = torch::outer(torch::arange(n, f64), inv);
  cos_ = (angles.cos() * attention_factor_).to(torch::kFloat).to(device);
  sin_ = (angles.sin() * attention_factor_).to(torch::kFloat).to(device);
  cached_len_ = n;
}

std::pair<torch::Tensor, torch::Tensor> RotaryTables::first(int64_t len, const torch::Device& device) {
  ensure(len, device);
  return {cos_.narrow(0, 0, len), sin_.narrow(0, 0, len)};
}

std::pair<torch::Tensor, torch::Tensor> RotaryTables::at(const torch::Tensor& positions) {
  if (positions.numel() == 0) throw std::invalid_argument("rotary embeddings: empty positions");
  const int64_t lo = positions.min().item<int64_t>();
  if (lo < 0) throw std::invalid_argument("rotary embeddings: negative position " + std::to_string(lo));
  ensure(positions.max().item<int64_t>() + 1, positions.device());
  const auto flat = positions.reshape({-1});
  std::vector<int64_t> shape = positions.sizes().vec();
  shape.push_back(static_cast<int64_t>(inv_freq_.size()));
  return {cos_.index_select(0, flat).view(shape), sin_.index_select(0, flat).view(shape)};
}

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3), R = 2 * cos.size(-1);
  // The first R dims as pairs: a view, since the last dim has unit stride.
  const auto pairs = x.narrow(-1, 0, R).view({B, H, T, R / 2, 2});
  const auto x0 = pairs.select(-1, 0), x1 = pairs.select(-1, 1);
  // [T, R/2] broadcasts over batch and heads; [B, T, R/2] gets a head axis.
  const auto c = cos.dim() == 3 ? cos.unsqueeze(1) : cos;
  const auto s = sin.dim() == 3 ? sin.unsqueeze(1) : sin;
  // fp32 tables promote bf16/fp16 inputs, so the rotation is computed in fp32.
  auto out = torch::stack({x0 * c - x1 * s, x1 * c + x0 * s}, -1).view({B, H, T, R});
  if (out.scalar_type() != x.scalar_type()) out = out.to(x.scalar_type());
  return R == D ? out : torch::cat({out, x.narrow(-1, R, D - R)}, -1);
}

torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& blocked, double scale, double softcap) {
  const auto B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const auto KV = k.size(1), L = k.size(2);
  if (H % KV != 0) throw std::invalid_argument("attention: query heads not a multiple of kv heads");
  const auto G = H / KV;
  // Query heads of one group are consecutive, so [B, H, T, D] is [B*KV, G*T, D]: every group then
  // multiplies its single kv head with one batched matmul and no repeated k/v.
  const auto q3 = q.contiguous().view({B * KV, G * T, D});
  const auto k3 = k.reshape({B * KV, L, D});
  const auto v3 = v.reshape({B * KV, L, D});
  auto scores = torch::bmm(q3, k3.transpose(1, 2));
  scores.mul_(scale);
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;  // in the scores' dtype, as Gemma 2
  const auto mask = blocked.dim() == 3 ? blocked.view({B, 1, 1, T, L}) : blocked;
  scores.view({B, KV, G, T, L}).masked_fill_(mask, -std::numeric_limits<double>::infinity());
  const bool reduced = scores.scalar_type() != torch::kFloat && scores.scalar_type() != torch::kDouble;
  // Reduced precision: softmax accumulates in fp32, as Hugging Face's eager attention does.
  const auto probs = reduced ? torch::softmax(scores, -1, torch::kFloat).to(v.scalar_type()) : torch::softmax(scores, -1);
  return torch::bmm(probs, v3).view({B, H, T, D});
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(AttentionDims d, torch::nn::AnyModule q, torch::nn::AnyModule k,
                                               torch::nn::AnyModule v, torch::nn::AnyModule o)
    : dims(d), q_proj(std::move(q)), k_proj(std::move(k)), v_proj(std::move(v)), output_proj(std::move(o)) {
  register_module("q_proj", q_proj.ptr());
  register_module("k_proj", k_proj.ptr());
  register_module("v_proj", v_proj.ptr());
  register_module("output_proj", output_proj.ptr());
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(AttentionDims d, torch::nn::AnyModule qkv, torch::nn::AnyModule o)
    : dims(d), output_proj(std::move(o)), qkv_proj(std::move(qkv)) {
  register_module("qkv_proj", qkv_proj.ptr());
  register_module("output_proj", output_proj.ptr());
}

void MultiHeadAttentionImpl::add_qk_norms(double eps, bool offset) {
  q_norm = register_module("q_norm", RMSNorm(dims.head_dim, eps, offset));
  k_norm = register_module("k_norm", RMSNorm(dims.head_dim, eps, offset));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::project_qkv(const torch::Tensor& x) {
  const auto B = x.size(0), T = x.size(1);
  const auto H = dims.num_heads, KV = dims.num_kv_heads, D = dims.head_dim;
  if (fused()) {
    const auto qkv = qkv_proj.forward(x);
    return {qkv.narrow(-1, 0, H * D).view({B, T, H, D}), qkv.narrow(-1, H * D, KV * D).view({B, T, KV, D}),
            qkv.narrow(-1, (H + KV) * D, KV * D).view({B, T, KV, D})};
  }
  // One statement each: with LoRA dropout the order decides which random masks each projection draws.
  auto q = q_proj.forward(x).view({B, T, H, D});
  auto k = k_proj.forward(x).view({B, T, KV, D});
  auto v = v_proj.forward(x).view({B, T, KV, D});
  return {q, k, v};
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, const PositionInfo& pos) {
  const auto B = x.size(0), T = x.size(1);
  const auto H = dims.num_heads, D = dims.head_dim;
  auto [q, k, v] = project_qkv(x);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  // Sliding layers may turn by their own rotary (Gemma 3's local base).
  const bool local = dims.sliding && pos.cos_local.defined();
  const auto& cos = local ? pos.cos_local : pos.cos;
  const auto& sin = local ? pos.sin_local : pos.sin;
  // [B, T, H, D] -> [B, H, T, D] as strided views; the rotation writes the contiguous result.
  q = apply_rotary(q.transpose(1, 2), cos, sin);
  k = apply_rotary(k.transpose(1, 2), cos, sin);
  v = v.transpose(1, 2);
  if (caches_are_enabled() && pos.input_pos.defined()) {
    if (B > k_cache_.size(0)) throw std::invalid_argument("KV cache set up for a smaller batch");
    auto kc = k_cache_.narrow(0, 0, B), vc = v_cache_.narrow(0, 0, B);
    kc.index_copy_(2, pos.input_pos, k.to(kc.scalar_type()));
    vc.index_copy_(2, pos.input_pos, v.to(vc.scalar_type()));
    k = kc.narrow(2, 0, pos.kv_len);
    v = vc.narrow(2, 0, pos.kv_len);
  }
  const auto& blocked = dims.sliding && pos.blocked_sliding.defined() ? pos.blocked_sliding : pos.blocked;
  const double scale = dims.scale > 0 ? dims.scale : 1.0 / std::sqrt(static_cast<double>(D));
  const auto out = grouped_query_attention(q, k, v, blocked, scale, dims.softcap);
  return output_proj.forward(out.transpose(1, 2).reshape({B, T, H * D}));
}

void MultiHeadAttentionImpl::setup_cache(int64_t batch, int64_t max_len, torch::ScalarType dtype,
                                         const torch::Device& device) {
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  k_cache_ = torch::zeros({batch, dims.num_kv_heads, max_len, dims.head_dim}, opts);
  v_cache_ = torch::zeros({batch, dims.num_kv_heads, max_len, dims.head_dim}, opts);
}

void MultiHeadAttentionImpl::teardown_cache() {
  k_cache_ = torch::Tensor();
  v_cache_ = torch::Tensor();
}

FeedForwardImpl::FeedForwardImpl(torch::nn::AnyModule gate, torch::nn::AnyModule down, torch::nn::AnyModule up,
                                 Activation act)
    : w1(std::move(gate)), w2(std::move(down)), w3(std::move(up)), activation(act) {
  register_module("w1", w1.ptr());
  register_module("w2", w2.ptr());
  register_module("w3", w3.ptr());
}

FeedForwardImpl::FeedForwardImpl(torch::nn::AnyModule gate_up, torch::nn::AnyModule down, Activation act)
    : w2(std::move(down)), gate_up_proj(std::move(gate_up)), activation(act) {
  register_module("gate_up_proj", gate_up_proj.ptr());
  register_module("w2", w2.ptr());
}

std::pair<torch::Tensor, torch::Tensor> FeedForwardImpl::gate_and_up(const torch::Tensor& x) {
  if (fused()) {
    const auto both = gate_up_proj.forward(x);
    const int64_t hidden = both.size(-1) / 2;
    return {both.narrow(-1, 0, hidden), both.narrow(-1, hidden, hidden)};
  }
  // Named steps: C++ leaves the order of `a(x) * b(x)` open, and with LoRA dropout the order of
  // the projections decides which random masks each one draws (the compiled step draws the same).
  auto gate = w1.forward(x);
  auto up = w3.forward(x);
  return {gate, up};
}

torch::Tensor gated_activation(const torch::Tensor& gate, const torch::Tensor& up, Activation activation) {
  if (activation == Activation::gelu_tanh) return torch::gelu(gate, "tanh") * up;
  return torch::silu(gate) * up;
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  const auto [gate, up] = gate_and_up(x);
  return w2.forward(gated_activation(gate, up, activation));
}

}  // namespace tb::models
