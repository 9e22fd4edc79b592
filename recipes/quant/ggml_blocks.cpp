#include "quant/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "quant/ggml_kquants.h"

namespace tb::quant {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void put_half(std::vector<uint8_t>& out, float f) {
  const uint16_t h = float_to_half(f);
  out.push_back(static_cast<uint8_t>(h & 0xff));
  out.push_back(static_cast<uint8_t>(h >> 8));
}
float get_half(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// The value of largest magnitude, with its sign (the first one met on ties), as ggml's q4_0/q5_0 take it.
float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

// q4_0: d = max / -8, codes (x / d + 8.5) truncated, at most 15; value (code - 8) * d.
void quantize_q4_0(const float* x, std::vector<uint8_t>& out) {
  const float d = signed_absmax(x, 32) / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < 16; ++j) {
    const auto lo = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f))));
    const auto hi = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f))));
    out.push_back(static_cast<uint8_t>(lo | (hi << 4)));
  }
}

// q5_0: as q4_0 with 5-bit codes around 16; the fifth bits of the 32 codes form a 32-bit word.
void quantize_q5_0(const float* x, std::vector<uint8_t>& out) {
  const float d = signed_absmax(x, 32) / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  uint32_t qh = 0;
  uint8_t qs[16];
  for (int j = 0; j < 16; ++j) {
    const int c0 = std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f)));
    const int c1 = std::min(31, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 16.5f)));
    qs[j] = static_cast<uint8_t>((c0 & 0x0f) | ((c1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((c0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((c1 >> 4) & 1) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(qh >> (8 * b)));
  out.insert(out.end(), qs, qs + 16);
}

// q5_1: 5-bit codes over [min, max]: d = (max - min) / 31, value code * d + min.
void quantize_q5_1(const float* x, std::vector<uint8_t>& out) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) {
    mn = std::min(mn, x[j]);
    mx = std::max(mx, x[j]);
  }
  const float d = (mx - mn) / 31;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  put_half(out, mn);
  uint32_t qh = 0;
  uint8_t qs[16];
  for (int j = 0; j < 16; ++j) {
    const int c0 = static_cast<uint8_t>((x[j] - mn) * id + 0.5f);
    const int c1 = static_cast<uint8_t>((x[j + 16] - mn) * id + 0.5f);
    qs[j] = static_cast<uint8_t>((c0 & 0x0f) | ((c1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((c0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((c1 >> 4) & 1) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(qh >> (8 * b)));
  out.insert(out.end(), qs, qs + 16);
}

// q8_0: d = absmax / 127, codes round(x / d) (half away from zero).
void quantize_q8_0(const float* x, std::vector<uint8_t>& out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < 32; ++j) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id))));
}

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

void dequantize_block(GgmlType type, const uint8_t* b, float* y) {
  switch (type) {
    case GgmlType::Q4_0: {
      const float d = get_half(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((b[2 + j] & 0x0f) - 8) * d;
        y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
      }
      return;
    }
    case GgmlType::Q5_0: {
      const float d = get_half(b);
      const uint32_t qh = read_u32(b + 2);
      for (int j = 0; j < 16; ++j) {
        const int c0 = (b[6 + j] & 0x0f) | (((qh >> j) & 1) << 4);
        const int c1 = (b[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = static_cast<float>(c0 - 16) * d;
        y[j + 16] = static_cast<float>(c1 - 16) * d;
      }
      return;
    }
    case GgmlType::Q5_1: {
      const float d = get_half(b), m = get_half(b + 2);
      const uint32_t qh = read_u32(b + 4);
      for (int j = 0; j < 16; ++j) {
        const int c0 = (b[8 + j] & 0x0f) | (((qh >> j) & 1) << 4);
        const int c1 = (b[8 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = static_cast<float>(c0) * d + m;
        y[j + 16] = static_cast<float>(c1) * d + m;
      }
      return;
    }
    case GgmlType::Q8_0: {
      const float d = get_half(b);
      for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
      return;
    }
    case GgmlType::Q4_K: dequantize_q4_k(b, y); return;
    case GgmlType::Q5_K: dequantize_q5_k(b, y); return;
    case GgmlType::Q6_K: dequantize_q6_k(b, y); return;
    default: throw std::invalid_argument(std::string("dequantize: not a block type: ") + ggml_type_name(type));
  }
}

}  // namespace

const char* ggml_type_name(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return "f32";
    case GgmlType::F16: return "f16";
    case GgmlType::Q4_0: return "q4_0";
    case GgmlType::Q5_0: return "q5_0";
    case GgmlType::Q5_1: return "q5_1";
    case GgmlType::Q8_0: return "q8_0";
    case GgmlType::Q4_K: return "q4_K";
    case GgmlType::Q5_K: return "q5_K";
    case GgmlType::Q6_K: return "q6_K";
    case GgmlType::BF16: return "bf16";
  }
  return "?";
}

int64_t ggml_block_size(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return 1;
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0: return 32;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return 256;
  }
  return 1;
}

int64_t ggml_block_bytes(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return 4;
    case GgmlType::F16:
    case GgmlType::BF16: return 2;
    case GgmlType::Q4_0: return 2 + 16;
    case GgmlType::Q5_0: return 2 + 4 + 16;
    case GgmlType::Q5_1: return 2 + 2 + 4 + 16;
    case GgmlType::Q8_0: return 2 + 32;
    case GgmlType::Q4_K: return 2 + 2 + 12 + 128;
    case GgmlType::Q5_K: return 2 + 2 + 12 + 32 + 128;
    case GgmlType::Q6_K: return 128 + 64 + 16 + 2;
  }
  return 0;
}

int64_t ggml_row_bytes(GgmlType type, int64_t n) {
  const int64_t block = ggml_block_size(type);
  if (n % block != 0)
    throw std::invalid_argument(std::string("a row of ") + std::to_string(n) + " weights does not divide into " +
                                ggml_type_name(type) + " blocks of " + std::to_string(block));
  return n / block * ggml_block_bytes(type);
}

uint16_t float_to_half(float f) {
  const uint32_t x = bits_of(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return sign | 0x7e00;   // NaN stays a (quiet) NaN
  if (ax >= 0x477ff000) return sign | 0x7c00;  // from 65520 up, nearest even is infinity
  if (ax < 0x38800000)                         // below 2^-14: a subnormal half, in units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::fabs(f) * 16777216.0f));
  const uint32_t rounded = ax + 0x0fff + ((ax >> 13) & 1);  // 23 -> 10 mantissa bits, ties to even
  return sign | static_cast<uint16_t>((rounded >> 13) - ((127 - 15) << 10));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000 | (mant << 13));
  return float_of(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t float_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 64);  // NaN: forced quiet
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float bf16_to_float(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

void quantize_row(GgmlType type, const float* x, int64_t n, std::vector<uint8_t>& out) {
  const int64_t bytes = ggml_row_bytes(type, n);
  out.reserve(out.size() + static_cast<size_t>(bytes));
  switch (type) {
    case GgmlType::F32: {
      const auto* p = reinterpret_cast<const uint8_t*>(x);
      out.insert(out.end(), p, p + n * 4);
      return;
    }
    case GgmlType::F16:
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == GgmlType::F16 ? float_to_half(x[i]) : float_to_bf16(x[i]);
        out.push_back(static_cast<uint8_t>(h & 0xff));
        out.push_back(static_cast<uint8_t>(h >> 8));
      }
      return;
    default: break;
  }
  const int64_t block = ggml_block_size(type);
  for (int64_t i = 0; i < n; i += block) {
    switch (type) {
      case GgmlType::Q4_0: quantize_q4_0(x + i, out); break;
      case GgmlType::Q5_0: quantize_q5_0(x + i, out); break;
      case GgmlType::Q5_1: quantize_q5_1(x + i, out); break;
      case GgmlType::Q8_0: quantize_q8_0(x + i, out); break;
      case GgmlType::Q4_K: quantize_q4_k(x + i, out); break;
      case GgmlType::Q5_K: quantize_q5_k(x + i, out); break;
      case GgmlType::Q6_K: quantize_q6_k(x + i, out); break;
      default: break;
    }
  }
}

void dequantize_row(GgmlType type, const uint8_t* data, int64_t n, float* y) {
  ggml_row_bytes(type, n);  // checks the length
  switch (type) {
    case GgmlType::F32: std::memcpy(y, data, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16:
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const auto h = static_cast<uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
        y[i] = type == GgmlType::F16 ? half_to_float(h) : bf16_to_float(h);
      }
      return;
    default: break;
  }
  const int64_t block = ggml_block_size(type), bytes = ggml_block_bytes(type);
  for (int64_t i = 0; i < n / block; ++i) dequantize_block(type, data + i * bytes, y + i * block);
}

}  // namespace tb::quant
