// How the fused loops read and write elements: fp32 as is, bf16 as its bit pattern (uint16_t), widened
// to fp32 for the arithmetic and rounded back when stored, as c10::BFloat16 converts (round to nearest
// even, NaN kept a NaN). Spelled with integer ops and no branch, so the loops vectorise and a bf16 step
// reads its tensors in place instead of through fp32 copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <torch/types.h>

// The loops are built for AVX-512, AVX2 and plain x86-64; the best the CPU has is picked at load time.
#define TB_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
// The helpers below are inlined into each of those builds.
#define TB_INLINE inline __attribute__((always_inline))

namespace tb::compile {

using bf16_bits = uint16_t;

TB_INLINE float load(float x) { return x; }
TB_INLINE float load(bf16_bits bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
TB_INLINE void store(float& out, float x) { out = x; }
TB_INLINE void store(bf16_bits& out, float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t nearest = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = 0u - uint32_t((u & 0x7FFFFFFFu) > 0x7F800000u);  // all ones for a NaN
  out = bf16_bits((nearest & ~nan) | (0x7FC0u & nan));
}
// x as it reads back after being stored in T.
template <typename T>
TB_INLINE float rounded(float x) {
  T t;
  store(t, x);
  return load(t);
}

// sum(a[i] * b[i]) in fp32, in 16 independent lanes, so the loop vectorises without reassociation flags.
template <typename T>
TB_INLINE float dot(const T* a, const T* b, int64_t n) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += load(a[i + j]) * load(b[i + j]);
  float total = 0.f;
  for (; i < n; ++i) total += load(a[i]) * load(b[i]);
  for (int j = 0; j < 16; ++j) total += lanes[j];
  return total;
}

// 16 fp32 lanes as one GCC vector; each clone of a TB_MULTIVERSION loop compiles it to its widest
// registers (one zmm, two ymm or four xmm). For the loops GCC's vectoriser leaves scalar: a max (it will
// not reorder x > m ? x : m into a reduction) and a bf16 row widened as it is read.
typedef float f32x16 __attribute__((vector_size(64)));

// v = x[0..16) in fp32 (by reference: a vector return value would change the ABI between the clones).
TB_INLINE void load16(const float* x, f32x16& v) { std::memcpy(&v, x, sizeof v); }
TB_INLINE void load16(const bf16_bits* x, f32x16& v) {
  typedef uint16_t u16x16 __attribute__((vector_size(32)));
  typedef uint32_t u32x16 __attribute__((vector_size(64)));
  u16x16 bits;
  std::memcpy(&bits, x, sizeof bits);
  const u32x16 wide = __builtin_convertvector(bits, u32x16) << 16;
  std::memcpy(&v, &wide, sizeof v);
}

// max(x[0..n)) of fp32 or bf16 elements (-inf when n is 0); when `widened` is given, x is also written
// there in fp32.
template <typename T>
TB_INLINE float max_of(const T* x, int64_t n, float* widened = nullptr) {
  f32x16 lanes = f32x16{} - __builtin_inff();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    f32x16 v;
    load16(x + i, v);
    if (widened) std::memcpy(widened + i, &v, sizeof v);
    lanes = v > lanes ? v : lanes;
  }
  float m = -__builtin_inff();
  for (int j = 0; j < 16; ++j) m = lanes[j] > m ? lanes[j] : m;
  for (; i < n; ++i) {
    const float v = load(x[i]);
    if (widened) widened[i] = v;
    m = v > m ? v : m;
  }
  return m;
}

// Calls f(T{}) with T the element type the loops use for `dtype`: bf16_bits for bf16, else float.
template <typename F>
void with_elements(torch::ScalarType dtype, F&& f) {
  if (dtype == torch::kBFloat16) f(bf16_bits{});
  else f(float{});
}

// A contiguous fp32 or bf16 tensor's elements as the loops address them.
template <typename T>
T* elements(const torch::Tensor& t) {
  if constexpr (std::is_same_v<T, float>) return t.data_ptr<float>();
  else return reinterpret_cast<bf16_bits*>(t.data_ptr<at::BFloat16>());
}

}  // namespace tb::compile
