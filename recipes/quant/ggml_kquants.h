// ggml's k-quant super-blocks (256 weights): q4_K, q5_K and q6_K. The byte layout and the
// dequantisation are ggml's (block_q4_K, block_q5_K, block_q6_K in ggml-common.h); how the scales are
// chosen is ours (a least-squares refit of each sub-block's scale and minimum, then the super-block's
// 6- or 8-bit scale codes, the weights coded again against the stored scales). ggml's own search
// (make_qkx2_quants) is slower and picks slightly different scales: our bytes differ from
// llama-quantize's, what they decode to follows the same formulas.
//
//   q4_K  fp16 d, fp16 dmin, 12 bytes of 6-bit (scale, min) codes for 8 sub-blocks of 32, 128 bytes of
//         4-bit codes: w = d * sc * q - dmin * m
//   q5_K  as q4_K with a fifth bit per weight (32 bytes of high bits): 5-bit codes
//   q6_K  128 bytes of low 4 bits, 64 bytes of high 2 bits, 16 int8 scales for sub-blocks of 16, fp16 d:
//         w = d * sc * (q - 32)
#pragma once

#include <cstdint>
#include <vector>

namespace tb::quant {

void quantize_q4_k(const float* x, std::vector<uint8_t>& out);  // 256 weights -> 144 bytes
void quantize_q5_k(const float* x, std::vector<uint8_t>& out);  // 256 weights -> 176 bytes
void quantize_q6_k(const float* x, std::vector<uint8_t>& out);  // 256 weights -> 210 bytes
void dequantize_q4_k(const uint8_t* block, float* y);
void dequantize_q5_k(const uint8_t* block, float* y);
void dequantize_q6_k(const uint8_t* block, float* y);

}  // namespace tb::quant
