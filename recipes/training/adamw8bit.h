// bitsandbytes' 8-bit AdamW (bnb.optim.AdamW8bit / PagedAdamW8bit, bitsandbytes >= 0.44) on the CPU.
// Both moments are kept block-wise quantized: each block of 256 consecutive elements (in the
// parameter's row-major order) stores one byte per element, an index into a 256-entry "dynamic" map
// (signed for the first moment, unsigned for the second), and one fp32 absmax; the value is
// map[code] * absmax. A step dequantizes a block, updates the moments and the parameter in fp32 with
// the unquantized new moments, and quantizes them back against the block's new absmax. Parameters
// with fewer than min_8bit_size elements keep fp32 moments (bitsandbytes' 32-bit Adam kernel).
//
// The arithmetic is that of bitsandbytes' CUDA kernels written out in IEEE fp32 (no fused multiply-add;
// correctly rounded division where CUDA uses __fdividef, beta^t in double rounded to float where it
// uses __powf), so it matches a float32 re-implementation of those kernels bit for bit. As in
// bitsandbytes: weight decay multiplies the parameter after the Adam update, eps is added to sqrt(v)
// as eps * sqrt(1 - beta2^t), and an element with a NaN or infinite gradient keeps its weight and
// restarts its moments from zero.
//
// It is its own torch::optim::Optimizer (not a torch AdamW, so the compile backend does not swap in
// its fused AdamW) and saves the codes, absmax and step count through the recipe's optimizer checkpoint.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <vector>

#include <torch/optim/optimizer.h>

namespace tb::training {

struct AdamW8bitOptions : torch::optim::OptimizerCloneableOptions<AdamW8bitOptions> {
  AdamW8bitOptions(double lr = 1e-3) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-3;
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 1e-2;
  // Parameters with fewer elements keep fp32 moments (bitsandbytes' default 4096).
  TORCH_ARG(int64_t, min_8bit_size) = 4096;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdamW8bitParamState : torch::optim::OptimizerCloneableParamState<AdamW8bitParamState> {
  TORCH_ARG(int64_t, step) = 0;
  // 8-bit: uint8 codes into the signed (state1) and unsigned (state2) map, shaped as the parameter,
  // with fp32 absmax1/absmax2 of ceil(numel / 256) blocks. Small parameters: fp32 moments, no absmax.
  TORCH_ARG(torch::Tensor, state1);
  TORCH_ARG(torch::Tensor, state2);
  TORCH_ARG(torch::Tensor, absmax1) = {};
  TORCH_ARG(torch::Tensor, absmax2) = {};

 public:
  bool quantized() const { return state1().scalar_type() == at::kByte; }
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class AdamW8bit : public torch::optim::Optimizer {
 public:
  static constexpr int64_t kBlockSize = 256;  // elements per absmax (bitsandbytes >= 0.44)

  explicit AdamW8bit(std::vector<torch::optim::OptimizerParamGroup> param_groups, AdamW8bitOptions defaults = {});
  explicit AdamW8bit(std::vector<torch::Tensor> params, AdamW8bitOptions defaults = {})
      : AdamW8bit({torch::optim::OptimizerParamGroup(std::move(params))}, defaults) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  // Throws naming the parameter when the archive's state is not this optimizer's (e.g. torch
  // AdamW's moments) or does not fit the parameters.
  void load(torch::serialize::InputArchive& archive) override;

  // The state of `param`, nullptr before its first step.
  const AdamW8bitParamState* state_of(const torch::Tensor& param) const;
  // Bytes its states take once every parameter has stepped (they are created lazily).
  int64_t state_bytes() const;
  // Of one parameter: 2 per element plus 8 per block of 256 (two absmax) when 8-bit, else 8 per element.
  static int64_t state_bytes_of(int64_t numel, int64_t min_8bit_size);
};

// bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): 256 ascending fp32
// values in [-1, 1] (signed) or [0, 1], dense near zero. signed: index 127 is 0, 255 is 1.
const std::array<float, 256>& dynamic_map(bool is_signed);

// The code of x (|x| <= 1, already divided by the block's absmax) as bitsandbytes' quantize_2D finds
// it (a bisection over the sorted map, then the nearer neighbour by their fp32 midpoint), here by
// counting the midpoints below x: the same code, ties included.
uint8_t quantize_to_map(bool is_signed, float x);

}  // namespace tb::training
