#include "training/adamw8bit.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/Parallel.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>
#include <torch/torch.h>

namespace tb::training {
namespace {

using Map = std::array<float, 256>;
constexpr int64_t kBlock = AdamW8bit::kBlockSize;
constexpr int64_t kGrainBlocks = 64;       // blocks per parallel task (16K elements)
constexpr int64_t kGrainElements = 16384;  // elements per task of the fp32 path

// create_dynamic_map, in torch's fp32 ops as bitsandbytes computes it (its reference replays them):
// for each exponent e = 0..6, the midpoints of linspace(0.1, 1, n_e) scaled by 10^(e - 6), with
// n_e = 2^e + 1 (signed, both signs) or 2^(e+1) + 1 (unsigned); plus 0 and 1, sorted.
Map make_dynamic_map(bool is_signed) {
  std::vector<float> values;
  for (int e = 0; e < 7; ++e) {
    const int64_t items = is_signed ? (int64_t(1) << e) + 1 : (int64_t(1) << (e + 1)) + 1;
    const auto bounds = torch::linspace(0.1, 1, items, torch::kFloat);
    const auto means = (bounds.slice(0, 0, items - 1) + bounds.slice(0, 1)) / 2.0;
    const double scale = std::pow(10.0, double(e - 6));
    for (const double sign : is_signed ? std::vector<double>{1, -1} : std::vector<double>{1}) {
      const auto scaled = (means * (sign * scale)).contiguous();
      values.insert(values.end(), scaled.data_ptr<float>(), scaled.data_ptr<float>() + scaled.numel());
    }
  }
  values.push_back(0.f);
  values.push_back(1.f);
  TORCH_INTERNAL_ASSERT(values.size() == 256);
  std::sort(values.begin(), values.end());
  Map map;
  std::copy(values.begin(), values.end(), map.begin());
  return map;
}

// quantize_2D without its search. The search from index 127 in steps 64..1 ends at an even index
// whose neighbours bracket x, then moves to a neighbour when x is past their fp32 midpoint: so the
// code is the number of midpoints t_k = (map[k] + map[k+1]) * 0.5f below x, where x exactly at t_k
// counts for odd k only. As one strict comparison: bounds[k] = t_k for even k, the float just below
// t_k for odd k; code = #{k < 255 : bounds[k] < x} (a NaN passes none: code 0).
struct QuantMap {
  Map values;
  std::array<float, 256> bounds;  // bounds[255] = +inf ends every count
  // The count for the smallest float of each 16-bit prefix (sign, exponent, 7 mantissa bits): from
  // there a value passes at most two more bounds when |x| <= 1.
  std::array<uint8_t, 1 << 16> start;
};

QuantMap make_quant_map(bool is_signed) {
  QuantMap q;
  const Map& map = q.values = make_dynamic_map(is_signed);
  for (int k = 0; k < 255; ++k) {
    const float midpoint = (map[k] + map[k + 1]) * 0.5f;
    q.bounds[k] = k % 2 ? std::nextafter(midpoint, -1.0f) : midpoint;
  }
  q.bounds[255] = std::numeric_limits<float>::infinity();
  for (uint32_t prefix = 0; prefix < q.start.size(); ++prefix) {
    const uint32_t bits = (prefix << 16) | (prefix >> 15 ? 0xFFFFu : 0u);  // the prefix's smallest value
    float lowest;
    std::memcpy(&lowest, &bits, sizeof lowest);
    const auto count = std::count_if(q.bounds.begin(), q.bounds.end() - 1, [&](float b) { return b < lowest; });
    q.start[prefix] = std::isfinite(lowest) ? uint8_t(count) : 0;  // NaNs' prefixes start at 0
  }
  return q;
}

const QuantMap& quant_map(bool is_signed) {
  static const QuantMap signed_map = make_quant_map(true);
  static const QuantMap unsigned_map = make_quant_map(false);
  return is_signed ? signed_map : unsigned_map;
}

inline uint8_t quantize(const QuantMap& q, float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int code = q.start[bits >> 16];
  code += q.bounds[code] < x;  // two steps without a branch cover |x| <= 1
  code += q.bounds[code] < x;
  while (q.bounds[code] < x) ++code;
  return uint8_t(code);
}

// What one step does with fixed hyper-parameters, in the kernels' fp32 (bitsandbytes passes them
// to its kernels as float).
struct StepConstants {
  float beta1, beta2, eps_c2, step_size, decay;
  bool decays;
};

StepConstants constants_of(const AdamW8bitOptions& o, int64_t step) {
  StepConstants k;
  const float lr = float(o.lr()), eps = float(o.eps()), wd = float(o.weight_decay());
  k.beta1 = float(std::get<0>(o.betas()));
  k.beta2 = float(std::get<1>(o.betas()));
  // beta^t as powf: the power of the float beta in double, rounded once to float.
  auto power = [step](float beta) { return float(std::pow(double(beta), double(step))); };
  const float correction1 = 1.0f - power(k.beta1);
  const float correction2 = std::sqrt(1.0f - power(k.beta2));
  // lr * sqrt(1 - beta2^t) / (1 - beta1^t) with eps scaled to match: eps sits outside the corrected sqrt(v).
  k.step_size = -lr * correction2 / correction1;
  k.eps_c2 = correction2 * eps;
  k.decay = 1.0f - lr * wd;
  k.decays = wd > 0.0f;
  return k;
}

// Decoupled weight decay, after the update (bitsandbytes' order, unlike torch's AdamW).
template <typename T>
T updated(T p, float m1, float m2, const StepConstants& k) {
  T v = T(float(p) + k.step_size * (m1 / (std::sqrt(m2) + k.eps_c2)));
  return k.decays ? T(float(v) * k.decay) : v;
}

// One block of kOptimizerStatic8bit2StateBlockwise: `count` (<= 256) elements and their block's absmax.
template <typename T>
void update_block(T* p, const T* g, uint8_t* c1, uint8_t* c2, float& absmax1, float& absmax2, int64_t count,
                  const StepConstants& k) {
  const QuantMap& q1 = quant_map(true);
  const QuantMap& q2 = quant_map(false);
  const Map& map1 = q1.values;
  const Map& map2 = q2.values;
  float m1[kBlock], m2[kBlock];
  float max1 = -FLT_MAX, max2 = -FLT_MAX;
  for (int64_t j = 0; j < count; ++j) {
    const float grad = float(g[j]);
    if (std::isfinite(grad)) {
      m2[j] = map2[c2[j]] * absmax2 * k.beta2 + (1.0f - k.beta2) * grad * grad;
      m1[j] = map1[c1[j]] * absmax1 * k.beta1 + (1.0f - k.beta1) * grad;
    } else {
      m1[j] = m2[j] = 0.0f;  // a NaN/inf gradient resets the element's moments
    }
    max1 = std::max(max1, std::fabs(m1[j]));  // as fmaxf: a NaN is passed over
    max2 = std::max(max2, std::fabs(m2[j]));
  }
  // The kernel's lanes past a tensor's end load code 128 (state1; code 0, value 0, for state2) and a
  // zero gradient, and take part in the block's absmax: so does their decayed value here.
  if (count < kBlock) max1 = std::max(max1, std::fabs(map1[128] * absmax1 * k.beta1));
  absmax1 = max1;
  absmax2 = max2;

  // The parameter moves with the new moments before they are quantized.
  for (int64_t j = 0; j < count; ++j)
    if (std::isfinite(float(g[j]))) p[j] = updated(p[j], m1[j], m2[j], k);

  for (int64_t j = 0; j < count; ++j) {
    uint8_t code = quantize(q1, m1[j] / max1);
    // A first moment must keep its sign: a code of the other sign moves one step toward it.
    if (std::signbit(map1[code]) != std::signbit(m1[j])) code = m1[j] > 0.0f ? uint8_t(code + 1) : uint8_t(code - 1);
    c1[j] = code;
    c2[j] = quantize(q2, m2[j] / max2);
  }
}

// kOptimizer32bit2State (Adam): the parameters below min_8bit_size.
template <typename T>
void update_fp32(T* p, const T* g, float* s1, float* s2, int64_t n, const StepConstants& k) {
  at::parallel_for(0, n, kGrainElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float grad = float(g[i]);
      s1[i] = s1[i] * k.beta1 + (1.0f - k.beta1) * grad;
      s2[i] = s2[i] * k.beta2 + (1.0f - k.beta2) * (grad * grad);
      p[i] = updated(p[i], s1[i], s2[i], k);
    }
  });
}

template <typename T>
void update_param(const at::Tensor& param, const at::Tensor& grad, AdamW8bitParamState& state, const StepConstants& k) {
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  const int64_t n = param.numel();
  if (!state.quantized()) {
    update_fp32(p, g, state.state1().data_ptr<float>(), state.state2().data_ptr<float>(), n, k);
    return;
  }
  uint8_t* c1 = state.state1().data_ptr<uint8_t>();
  uint8_t* c2 = state.state2().data_ptr<uint8_t>();
  float* absmax1 = state.absmax1().data_ptr<float>();
  float* absmax2 = state.absmax2().data_ptr<float>();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  at::parallel_for(0, blocks, kGrainBlocks, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t at = b * kBlock;
      update_block(p + at, g + at, c1 + at, c2 + at, absmax1[b], absmax2[b], std::min(kBlock, n - at), k);
    }
  });
}

std::string key_of(const at::Tensor& param) { return c10::guts::to_string(param.unsafeGetTensorImpl()); }

int64_t blocks_of(int64_t numel) { return (numel + kBlock - 1) / kBlock; }

// The problem with a loaded state for `param`, or "".
std::string state_problem(const AdamW8bitParamState& s, const at::Tensor& param) {
  if (!s.state1().defined() || !s.state2().defined() || s.step() < 1)
    return "it holds no AdamW8bit state (was the checkpoint written with another optimizer?)";
  if (s.state1().numel() != param.numel() || s.state2().numel() != param.numel())
    return "its state has " + std::to_string(s.state1().numel()) + " elements, the parameter " +
           std::to_string(param.numel());
  if (s.quantized()) {
    const bool codes = s.state2().scalar_type() == at::kByte;
    const bool absmax = s.absmax1().defined() && s.absmax2().defined() && s.absmax1().scalar_type() == at::kFloat &&
                        s.absmax2().scalar_type() == at::kFloat && s.absmax1().numel() == blocks_of(param.numel()) &&
                        s.absmax2().numel() == s.absmax1().numel();
    if (!codes || !absmax) return "its 8-bit state lacks codes or one absmax per block of 256";
  } else if (s.state1().scalar_type() != at::kFloat || s.state2().scalar_type() != at::kFloat) {
    return "its 32-bit state is not fp32";
  }
  return "";
}

}  // namespace

const std::array<float, 256>& dynamic_map(bool is_signed) { return quant_map(is_signed).values; }

uint8_t quantize_to_map(bool is_signed, float x) { return quantize(quant_map(is_signed), x); }

void AdamW8bitOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(min_8bit_size);
}

// Tolerant of missing keys (another optimizer's archive): load() then says what is wrong.
void AdamW8bitOptions::serialize(torch::serialize::InputArchive& archive) {
  c10::IValue v;
  if (archive.try_read("lr", v)) lr(v.toDouble());
  if (archive.try_read("betas", v)) betas(v.to<betas_t>());
  if (archive.try_read("eps", v)) eps(v.toDouble());
  if (archive.try_read("weight_decay", v)) weight_decay(v.toDouble());
  if (archive.try_read("min_8bit_size", v)) min_8bit_size(v.toInt());
}

void AdamW8bitParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(state1);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(state2);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(absmax1);  // absent for a 32-bit state
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(absmax2);
}

void AdamW8bitParamState::serialize(torch::serialize::InputArchive& archive) {
  c10::IValue v;
  if (archive.try_read("step", v) && v.isInt()) step(v.toInt());
  if (archive.try_read("state1", v) && v.isTensor()) state1(v.toTensor());
  if (archive.try_read("state2", v) && v.isTensor()) state2(v.toTensor());
  if (archive.try_read("absmax1", v) && v.isTensor()) absmax1(v.toTensor());
  if (archive.try_read("absmax2", v) && v.isTensor()) absmax2(v.toTensor());
}

AdamW8bit::AdamW8bit(std::vector<torch::optim::OptimizerParamGroup> param_groups, AdamW8bitOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamW8bitOptions>(defaults)) {
  const auto [beta1, beta2] = defaults.betas();
  TORCH_CHECK(defaults.lr() >= 0, "Invalid learning rate: ", defaults.lr());
  TORCH_CHECK(defaults.eps() >= 0, "Invalid epsilon value: ", defaults.eps());
  TORCH_CHECK(0 <= beta1 && beta1 < 1 && 0 <= beta2 && beta2 < 1, "Invalid betas: (", beta1, ", ", beta2, ")");
  TORCH_CHECK(defaults.weight_decay() >= 0, "Invalid weight_decay value: ", defaults.weight_decay());
  quant_map(true);  // built here rather than first thing in a parallel loop
  quant_map(false);
}

torch::Tensor AdamW8bit::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const AdamW8bitOptions&>(group.options());
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      const auto dtype = param.scalar_type();
      TORCH_CHECK(dtype == at::kFloat || dtype == at::kBFloat16, "AdamW8bit: fp32 or bf16 parameters only, not ",
                  dtype);
      TORCH_CHECK(param.grad().scalar_type() == dtype, "AdamW8bit: the gradient's dtype is not the parameter's");
      auto& slot = state_[key_of(param)];
      if (!slot) {
        auto fresh = std::make_unique<AdamW8bitParamState>();
        if (param.numel() >= options.min_8bit_size()) {
          fresh->state1(torch::zeros(param.sizes(), torch::kByte));
          fresh->state2(torch::zeros(param.sizes(), torch::kByte));
          fresh->absmax1(torch::zeros({blocks_of(param.numel())}, torch::kFloat));
          fresh->absmax2(torch::zeros({blocks_of(param.numel())}, torch::kFloat));
        } else {
          fresh->state1(torch::zeros(param.sizes(), torch::kFloat));
          fresh->state2(torch::zeros(param.sizes(), torch::kFloat));
        }
        slot = std::move(fresh);
      }
      auto& state = static_cast<AdamW8bitParamState&>(*slot);
      state.step(state.step() + 1);
      const StepConstants k = constants_of(options, state.step());
      // The kernels walk memory in order: a strided parameter steps as its contiguous copy.
      auto work = param.contiguous();
      const auto grad = param.grad().contiguous();
      if (dtype == at::kFloat)
        update_param<float>(work, grad, state, k);
      else
        update_param<at::BFloat16>(work, grad, state, k);
      if (!work.is_same(param)) param.copy_(work);
    }
  }
  return loss;
}

void AdamW8bit::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<AdamW8bitParamState, AdamW8bitOptions>(archive, *this);
}

void AdamW8bit::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<AdamW8bitParamState, AdamW8bitOptions>(archive, *this);
  int64_t index = 0;
  for (const auto& group : param_groups_) {
    for (const auto& param : group.params()) {
      if (const auto* s = state_of(param)) {
        const std::string problem = state_problem(*s, param);
        if (!problem.empty())
          throw std::runtime_error("AdamW8bit: cannot load the optimizer state of parameter " + std::to_string(index) +
                                   ": " + problem);
      }
      ++index;
    }
  }
}

const AdamW8bitParamState* AdamW8bit::state_of(const torch::Tensor& param) const {
  const auto it = state_.find(key_of(param));
  return it == state_.end() ? nullptr : static_cast<const AdamW8bitParamState*>(it->second.get());
}

int64_t AdamW8bit::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& group : param_groups_) {
    const int64_t min_size = static_cast<const AdamW8bitOptions&>(group.options()).min_8bit_size();
    for (const auto& param : group.params()) bytes += state_bytes_of(param.numel(), min_size);
  }
  return bytes;
}

int64_t AdamW8bit::state_bytes_of(int64_t numel, int64_t min_8bit_size) {
  if (numel < min_8bit_size) return 2 * 4 * numel;
  return 2 * numel + 2 * 4 * blocks_of(numel);
}

}  // namespace tb::training
