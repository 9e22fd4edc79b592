// The e^x of the fused kernels: the softmaxes (attention, cross entropy) and SwiGLU's sigmoid.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tb::compile {

// e^x without a libm call, so the loops vectorise: 2^n * e^r with n = round(x / ln 2), |r| <= ln2 / 2,
// and a degree-7 Taylor polynomial (relative error ~2e-7). x is clamped to [-87, 88]: below, e^-87
// (~1.6e-38) instead of an underflow; above, e^88 (~1.7e38), where the exponent bits would overflow
// (SwiGLU's sigmoid 1 / (1 + e^-x) takes x up to 88 and beyond).
__attribute__((always_inline)) inline float exp_clamped(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln 2 split in two for the reduction
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return p * two_n;
}

}  // namespace tb::compile
