#include "quant/ggml_kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"

namespace tb::quant {

namespace {

constexpr int kSuper = 256;

int nearest(float v) { return static_cast<int>(std::lrint(v)); }  // ties to even, as ggml's nearest_int

void put_half(uint8_t* p, float f) {
  const uint16_t h = float_to_half(f);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}
float get_half(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// x ~ scale * q - min with q in [0, nmax], min >= 0, for one sub-block of 32: the codes of the
// min/max fit, then a weighted least-squares refit of (scale, min) to those codes, twice; the better of
// the fits by weighted squared error is kept. Weights favour large magnitudes (as ggml weighs them).
struct MinFit {
  float scale = 0, min = 0;
};

float fit_error(const float* x, const float* w, int n, int nmax, MinFit f) {
  float err = 0;
  for (int i = 0; i < n; ++i) {
    const int q = f.scale > 0 ? std::clamp(nearest((x[i] + f.min) / f.scale), 0, nmax) : 0;
    const float d = f.scale * static_cast<float>(q) - f.min - x[i];
    err += w[i] * d * d;
  }
  return err;
}

MinFit fit_sub_block(const float* x, int n, int nmax) {
  float lo = 0, hi = x[0], sum_x2 = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_x2 += x[i] * x[i];
  }
  if (hi <= lo) return {0, -lo};
  float w[32];
  const float av = std::sqrt(sum_x2 / static_cast<float>(n));
  for (int i = 0; i < n; ++i) w[i] = av + std::fabs(x[i]);
  MinFit best{(hi - lo) / static_cast<float>(nmax), -lo};
  float best_err = fit_error(x, w, n, nmax, best);
  MinFit f = best;
  for (int iter = 0; iter < 2; ++iter) {
    double sw = 0, swl = 0, swll = 0, swx = 0, swxl = 0;
    for (int i = 0; i < n; ++i) {
      const double l = std::clamp(nearest((x[i] + f.min) / f.scale), 0, nmax);
      sw += w[i];
      swl += w[i] * l;
      swll += w[i] * l * l;
      swx += w[i] * x[i];
      swxl += w[i] * x[i] * l;
    }
    const double det = sw * swll - swl * swl;
    if (det <= 0 || swll <= 0) break;
    double scale = (sw * swxl - swx * swl) / det, offset = (swll * swx - swl * swxl) / det;
    if (offset > 0) {  // the minimum must not lift the block: pin it at zero
      offset = 0;
      scale = swxl / swll;
    }
    if (!(scale > 0)) break;
    f = {static_cast<float>(scale), static_cast<float>(-offset)};
    const float err = fit_error(x, w, n, nmax, f);
    if (err < best_err) {
      best = f;
      best_err = err;
    }
  }
  return best;
}

void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The shared part of q4_K and q5_K: d, dmin and the 12 scale bytes written to `head` (16 bytes), the
// codes (0..nmax) of the 256 weights against the stored scales into L.
void quantize_min_super_block(const float* x, int nmax, uint8_t* head, uint8_t* L) {
  MinFit fits[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    fits[j] = fit_sub_block(x + 32 * j, 32, nmax);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* scales = head + 4;
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    const int ls = std::min(63, nearest(inv_scale * fits[j].scale));
    const int lm = std::min(63, nearest(inv_min * fits[j].min));
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls);
      scales[j + 4] = static_cast<uint8_t>(lm);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  put_half(head, max_scale / 63.f);
  put_half(head + 2, max_min / 63.f);
  const float d = get_half(head), dmin = get_half(head + 2);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    scale_min_k4(j, scales, sc, m);
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = dj != 0 ? static_cast<uint8_t>(std::clamp(nearest((x[32 * j + i] + mj) / dj), 0, nmax)) : 0;
  }
}

}  // namespace

void quantize_q4_k(const float* x, std::vector<uint8_t>& out) {
  uint8_t block[144] = {};
  uint8_t L[kSuper];
  quantize_min_super_block(x, 15, block, L);
  uint8_t* q = block + 16;
  for (int j = 0; j < kSuper; j += 64, q += 32)
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  out.insert(out.end(), block, block + sizeof block);
}

void quantize_q5_k(const float* x, std::vector<uint8_t>& out) {
  uint8_t block[176] = {};
  uint8_t L[kSuper];
  quantize_min_super_block(x, 31, block, L);
  uint8_t* qh = block + 16;
  uint8_t* ql = block + 48;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kSuper; n += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
  }
  out.insert(out.end(), block, block + sizeof block);
}

// q6_K: each sub-block of 16 scaled so its largest magnitude codes as -32; the 16 scales coded as int8
// against d, so the largest of them codes as -128; the weights coded again against the stored scales.
void quantize_q6_k(const float* x, std::vector<uint8_t>& out) {
  uint8_t block[210] = {};
  uint8_t* ql = block;
  uint8_t* qh = block + 128;
  auto* sc = reinterpret_cast<int8_t*>(block + 192);
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    float amax = 0, signed_max = 0;
    for (int i = 0; i < 16; ++i)
      if (std::fabs(x[16 * ib + i]) > amax) {
        amax = std::fabs(x[16 * ib + i]);
        signed_max = x[16 * ib + i];
      }
    scales[ib] = signed_max / -32.f;
    if (std::fabs(scales[ib]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < 1e-15f) {  // all (nearly) zero: every code and scale zero
    out.insert(out.end(), block, block + sizeof block);
    return;
  }
  const float iscale = -128.f / max_scale;
  put_half(block + 208, 1 / iscale);
  for (int ib = 0; ib < 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearest(iscale * scales[ib])));
  const float d = get_half(block + 208);
  uint8_t L[kSuper];
  for (int j = 0; j < 16; ++j) {
    const float dj = d * static_cast<float>(sc[j]);
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] =
          static_cast<uint8_t>((dj != 0 ? std::clamp(nearest(x[16 * j + i] / dj), -32, 31) : 0) + 32);
  }
  for (int j = 0; j < kSuper; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((L[j + l] & 0x0f) | ((L[j + l + 64] & 0x0f) << 4));
      ql[l + 32] = static_cast<uint8_t>((L[j + l + 32] & 0x0f) | ((L[j + l + 96] & 0x0f) << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                   ((L[j + l + 96] >> 4) << 6));
    }
  }
  out.insert(out.end(), block, block + sizeof block);
}

void dequantize_q4_k(const uint8_t* block, float* y) {
  const float d = get_half(block), dmin = get_half(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* q = block + 16;
  for (int j = 0, is = 0; j < kSuper; j += 64, q += 32, is += 2) {
    int sc1 = 0, m1 = 0, sc2 = 0, m2 = 0;
    scale_min_k4(is, scales, sc1, m1);
    scale_min_k4(is + 1, scales, sc2, m2);
    for (int l = 0; l < 32; ++l) *y++ = d * static_cast<float>(sc1) * static_cast<float>(q[l] & 0x0f) - dmin * static_cast<float>(m1);
    for (int l = 0; l < 32; ++l) *y++ = d * static_cast<float>(sc2) * static_cast<float>(q[l] >> 4) - dmin * static_cast<float>(m2);
  }
}

void dequantize_q5_k(const uint8_t* block, float* y) {
  const float d = get_half(block), dmin = get_half(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* qh = block + 16;
  const uint8_t* ql = block + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kSuper; j += 64, ql += 32, is += 2, u1 <<= 2, u2 <<= 2) {
    int sc1 = 0, m1 = 0, sc2 = 0, m2 = 0;
    scale_min_k4(is, scales, sc1, m1);
    scale_min_k4(is + 1, scales, sc2, m2);
    for (int l = 0; l < 32; ++l)
      *y++ = d * static_cast<float>(sc1) * static_cast<float>((ql[l] & 0x0f) + ((qh[l] & u1) ? 16 : 0)) -
             dmin * static_cast<float>(m1);
    for (int l = 0; l < 32; ++l)
      *y++ = d * static_cast<float>(sc2) * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) -
             dmin * static_cast<float>(m2);
  }
}

void dequantize_q6_k(const uint8_t* block, float* y) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
  const float d = get_half(block + 208);
  for (int n = 0; n < kSuper; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

}  // namespace tb::quant
