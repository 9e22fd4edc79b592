// ggml's tensor storage types as GGUF files hold them: the float types and the block formats
// (a block of 32 or 256 weights sharing fp16 scales), byte for byte as ggml lays them out, with the
// rounding of ggml's reference quantizers (quantize_row_*_ref), so a file we write reads in llama.cpp
// as if llama.cpp had written it. Written by hand: no Debian package provides ggml's formats.
//
// Rows only: a tensor is quantised row by row (ggml's ne[0], the last PyTorch dimension), and a row's
// length must be a multiple of the type's block size (ggml refuses other shapes too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tb::quant {

// ggml_type ids (ggml.h); the numbers are part of the file format.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

const char* ggml_type_name(GgmlType type);  // "f32", "q4_K", ... (ggml's own spelling)
int64_t ggml_block_size(GgmlType type);     // weights per block: 1, 32 or 256
int64_t ggml_block_bytes(GgmlType type);    // bytes per block
// Bytes of a row of n weights; throws std::invalid_argument when n is not a multiple of the block size.
int64_t ggml_row_bytes(GgmlType type, int64_t n);

// IEEE half and bfloat16 from float, rounded to nearest even (ggml's GGML_FP32_TO_FP16 / _TO_BF16).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);

// One row of n floats in `type`, appended to `out`.
void quantize_row(GgmlType type, const float* x, int64_t n, std::vector<uint8_t>& out);
// The n floats a row of `type` stands for (the dequantisation formulas of ggml).
void dequantize_row(GgmlType type, const uint8_t* data, int64_t n, float* y);

}  // namespace tb::quant
