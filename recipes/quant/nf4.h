// NF4 (4-bit NormalFloat) weights as QLoRA stores its frozen base weights, with torchao's NF4Tensor
// semantics: the weight is flattened into blocks of block_size values, each block is divided by its
// absmax and every value mapped to the nearest of the 16 NF4 codes; two 4-bit code indices share a
// byte, the first element in the high nibble. The fp32 absmax scales are quantised again (double
// quantisation): minus their global mean (scale_offset), in groups of scaler_block_size each group's
// centred scales are multiplied by s2 = 256 / (2 * absmax(group)), rounded (half to even) and
// clamped to int8; a scale is dequantised as code / s2 + scale_offset.
//
// Storage per parameter: 1/2 byte + 1/block_size (int8 scale) + 4/(block_size * scaler_block_size),
// about 0.516 bytes with the defaults, against 2 for bf16.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace tb::quant {

struct NF4Weight {
  torch::Tensor packed;         // uint8 [numel / 2]: (code[2i] << 4) | code[2i + 1]
  torch::Tensor scale_codes;    // int8 [n_blocks]: round((absmax - scale_offset) * s2), clamped
  torch::Tensor scale_factors;  // fp32 [n_scaler_groups]: s2 of each group of scaler_block_size scales
  float scale_offset = 0;       // mean of all the blocks' absmax scales
  std::vector<int64_t> shape;   // of the original weight
  int64_t block_size = 64;
  int64_t scaler_block_size = 256;

  int64_t numel() const;
  int64_t n_blocks() const { return numel() / block_size; }
  // Bytes of the quantised data: the three tensors and the fp32 offset (not the shape metadata).
  int64_t bytes() const;
};

// The 16 NF4 code values (QLoRA / bitsandbytes), sorted ascending, from -1 to 1 with an exact 0.
const std::array<float, 16>& nf4_code_book();

// Quantises a floating-point weight of any shape (computed in fp32 whatever its dtype). Throws
// std::invalid_argument when the weight is empty, not floating point or holds inf/NaN, when its numel is not a
// multiple of block_size, or when block_size is not a positive even number or scaler_block_size not
// positive. The number of blocks need not be a multiple of scaler_block_size: the last group of
// scales is then shorter and gets its own s2 from its own absmax.
NF4Weight quantize_nf4(const torch::Tensor& weight, int64_t block_size = 64, int64_t scaler_block_size = 256);

// Bytes an NF4 weight takes per parameter (the storage line above), for memory checks before building.
constexpr double nf4_bytes_per_parameter(int64_t block_size = 64, int64_t scaler_block_size = 256) {
  return 0.5 + 1.0 / double(block_size) + 4.0 / (double(block_size) * double(scaler_block_size));
}

// The weight back in its original shape: code value * dequantised block scale, computed in fp32 and
// returned in dtype. (Quantisation divides by the true absmax; only dequantisation sees the
// double-quantised scale, as in torchao.)
torch::Tensor dequantize_nf4(const NF4Weight& w, torch::ScalarType dtype = torch::kFloat32);

// The per-block scales as dequantize_nf4 uses them, fp32 [n_blocks].
torch::Tensor dequantize_nf4_scales(const NF4Weight& w);

// y = input @ W^T with W [out, in] dequantised to input's dtype; input [..., in]. The weight is
// frozen: autograd gives input a gradient (grad_out @ W) and never the weight. The autograd node
// keeps only the NF4 tensors and re-dequantises W in backward, so no full-precision copy of W
// outlives the call.
torch::Tensor linear_nf4(const torch::Tensor& input, const std::shared_ptr<const NF4Weight>& weight);

}  // namespace tb::quant
