#include "quant/nf4.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::quant {

namespace {

// Quantile-based levels of N(0, 1) rescaled to [-1, 1], with an exact zero (QLoRA, appendix E).
constexpr std::array<float, 16> kCodeBook = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

// Blocks normalised and searched per chunk of about this many values: the temporaries (a few
// int32/fp32 tensors of this length) stay small and in cache.
constexpr int64_t kSearchChunk = int64_t(1) << 18;

torch::Tensor code_book_tensor(const torch::Device& device) {
  return torch::tensor(std::vector<float>(kCodeBook.begin(), kCodeBook.end()),
                       torch::dtype(torch::kFloat).device(device));
}

// Index of the nearest code for each value of x (fp32, 1-D), as int32. Same result as an argmin of
// |x - code| over all 16 codes (torchao), ties going to the lower index, without its [numel, 16]
// temporary: bucketize finds codes[j-1] < x <= codes[j], and the nearest code is one of those two.
torch::Tensor nearest_code_index(const torch::Tensor& x, const torch::Tensor& codes) {
  const auto upper = torch::bucketize(x, codes, /*out_int32=*/true);
  const auto hi = upper.clamp_max(15);
  const auto lo = (upper - 1).clamp_min_(0);
  const auto d_hi = (x - codes.index_select(0, hi)).abs_();
  const auto d_lo = (x - codes.index_select(0, lo)).abs_();
  return torch::where(d_hi < d_lo, hi, lo);
}

// Code indices of blocks [n_blocks, block_size] divided by their divisor [n_blocks], flat uint8.
torch::Tensor block_code_indices(const torch::Tensor& blocks, const torch::Tensor& divisor) {
  const auto codes = code_book_tensor(blocks.device());
  auto out = torch::empty({blocks.numel()}, blocks.options().dtype(torch::kByte));
  const int64_t rows = std::max<int64_t>(1, kSearchChunk / blocks.size(1));
  for (int64_t start = 0; start < blocks.size(0); start += rows) {
    const int64_t n = std::min(rows, blocks.size(0) - start);
    const auto x = (blocks.narrow(0, start, n) / divisor.narrow(0, start, n).unsqueeze(1)).flatten();
    out.narrow(0, start * blocks.size(1), x.numel()).copy_(nearest_code_index(x, codes));
  }
  return out;
}

// One entry per group of scaler_block_size consecutive blocks, expanded back to one per block (the
// last group may be shorter).
torch::Tensor per_block(const torch::Tensor& per_group, int64_t scaler_block_size, int64_t n_blocks) {
  return per_group.repeat_interleave(scaler_block_size).narrow(0, 0, n_blocks);
}

void check_arguments(const torch::Tensor& weight, int64_t block_size, int64_t scaler_block_size) {
  if (block_size <= 0 || block_size % 2 != 0)
    throw std::invalid_argument("NF4 block_size must be a positive even number, got " + std::to_string(block_size));
  if (scaler_block_size <= 0)
    throw std::invalid_argument("NF4 scaler_block_size must be positive, got " + std::to_string(scaler_block_size));
  if (!weight.defined() || weight.numel() == 0) throw std::invalid_argument("NF4 cannot quantise an empty tensor");
  if (!weight.is_floating_point())
    throw std::invalid_argument(std::string("NF4 quantises floating-point tensors, got ") +
                                c10::toString(weight.scalar_type()));
  if (weight.numel() % block_size != 0)
    throw std::invalid_argument("NF4 needs numel divisible by block_size " + std::to_string(block_size) + ", got " +
                                std::to_string(weight.numel()) + " elements of shape " + c10::str(weight.sizes()));
}

}  // namespace

int64_t NF4Weight::numel() const {
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

int64_t NF4Weight::bytes() const {
  int64_t n = static_cast<int64_t>(sizeof(scale_offset));
  for (const auto* t : {&packed, &scale_codes, &scale_factors})
    if (t->defined()) n += static_cast<int64_t>(t->nbytes());
  return n;
}

const std::array<float, 16>& nf4_code_book() { return kCodeBook; }

NF4Weight quantize_nf4(const torch::Tensor& weight, int64_t block_size, int64_t scaler_block_size) {
  check_arguments(weight, block_size, scaler_block_size);
  torch::NoGradGuard no_grad;
  NF4Weight w;
  w.shape = weight.sizes().vec();
  w.block_size = block_size;
  w.scaler_block_size = scaler_block_size;
  const int64_t n_blocks = weight.numel() / block_size;

  const auto blocks = weight.detach().to(torch::kFloat).reshape({n_blocks, block_size});
  const auto absmax = blocks.abs().amax(1);
  if (!torch::isfinite(absmax).all().item<bool>())
    throw std::invalid_argument("NF4 cannot quantise a tensor with inf or NaN values");

  // An all-zero block has absmax 0: divide by 1 instead, so its values map to the code 0.0.
  const auto divisor = torch::where(absmax > 0, absmax, torch::ones_like(absmax));
  const auto pairs = block_code_indices(blocks, divisor).view({-1, 2});
  w.packed = pairs.select(1, 0) * 16 + pairs.select(1, 1);  // high nibble first; stays uint8 (<= 255)

  // Double quantisation. Padding the centred scales with zeros to whole groups leaves every group's
  // absmax unchanged, so a short last group is quantised by its own absmax.
  w.scale_offset = absmax.mean().item<float>();
  const auto centred = absmax - w.scale_offset;
  const int64_t n_groups = (n_blocks + scaler_block_size - 1) / scaler_block_size;
  const auto padded = torch::constant_pad_nd(centred, {0, n_groups * scaler_block_size - n_blocks});
  const auto group_absmax = padded.view({n_groups, scaler_block_size}).abs().amax(1);
  // torchao's factor 256 / (2 * absmax) maps the group onto [-128, 128]; the one scale at +128 is
  // clamped to 127. A group of equal scales (absmax 0) has only zero codes: any finite factor will do.
  w.scale_factors = torch::where(group_absmax > 0, 256.0 / (2.0 * group_absmax), torch::ones_like(group_absmax));
  w.scale_codes = (centred * per_block(w.scale_factors, scaler_block_size, n_blocks))
                      .round()  // half to even, as torch.round
                      .clamp(-128, 127)
                      .to(torch::kChar);
  return w;
}

torch::Tensor dequantize_nf4_scales(const NF4Weight& w) {
  torch::NoGradGuard no_grad;
  const auto factors = per_block(w.scale_factors, w.scaler_block_size, w.n_blocks());
  return w.scale_codes.to(torch::kFloat) / factors + w.scale_offset;
}

torch::Tensor dequantize_nf4(const NF4Weight& w, torch::ScalarType dtype) {
  if (!w.packed.defined() || w.packed.numel() * 2 != w.numel())
    throw std::invalid_argument("NF4 weight is empty or its packed data does not match its shape");
  torch::NoGradGuard no_grad;
  // Every byte value decodes to a fixed pair of codes: one gather of [256, 2] rows unpacks both nibbles.
  const auto codes = code_book_tensor(w.packed.device());
  const auto byte_pairs = torch::stack({codes.repeat_interleave(16), codes.repeat({16})}, 1);
  const auto values = byte_pairs.index_select(0, w.packed.to(torch::kInt)).view({w.n_blocks(), w.block_size});
  return values.mul_(dequantize_nf4_scales(w).unsqueeze(1)).view(w.shape).to(dtype);
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The node keeps the NF4 tensors (shared, not copied) and the scalars, never the dequantised W;
// backward dequantises again. A shared_ptr does not fit in saved_data without registering a class.
struct LinearNF4 : torch::autograd::Function<LinearNF4> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const std::shared_ptr<const NF4Weight>& w) {
    ctx->save_for_backward({w->packed, w->scale_codes, w->scale_factors});
    ctx->saved_data["scale_offset"] = static_cast<double>(w->scale_offset);
    ctx->saved_data["shape"] = w->shape;
    ctx->saved_data["block_size"] = w->block_size;
    ctx->saved_data["scaler_block_size"] = w->scaler_block_size;
    return input.matmul(dequantize_nf4(*w, input.scalar_type()).t());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    NF4Weight w;
    w.packed = saved[0];
    w.scale_codes = saved[1];
    w.scale_factors = saved[2];
    w.scale_offset = static_cast<float>(ctx->saved_data["scale_offset"].toDouble());
    w.shape = ctx->saved_data["shape"].toIntVector();
    w.block_size = ctx->saved_data["block_size"].toInt();
    w.scaler_block_size = ctx->saved_data["scaler_block_size"].toInt();
    const auto& grad = grad_outputs[0];
    return {grad.matmul(dequantize_nf4(w, grad.scalar_type())), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor linear_nf4(const torch::Tensor& input, const std::shared_ptr<const NF4Weight>& weight) {
  if (!weight) throw std::invalid_argument("linear_nf4: null weight");
  if (weight->shape.size() != 2)
    throw std::invalid_argument("linear_nf4: the weight must be 2-D [out, in], got " +
                                std::to_string(weight->shape.size()) + " dims");
  if (input.dim() < 1 || input.size(-1) != weight->shape[1])
    throw std::invalid_argument("linear_nf4: input of shape " + c10::str(input.sizes()) +
                                " does not match a weight of in_features " + std::to_string(weight->shape[1]));
  return LinearNF4::apply(input, weight);
}

}  // namespace tb::quant
