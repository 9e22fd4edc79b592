#include "compile/fused_adamw.h"

#include "compile/element_access.h"

#include <ATen/Parallel.h>
#include <immintrin.h>
#include <torch/torch.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tb::compile {
namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;

// The key torch's optimizers file a parameter's state under: the TensorImpl pointer, as a string in
// LibTorch 1.x (printed as c10::guts::to_string prints it) and as the pointer itself in 2.x.
template <typename StateMap>
typename StateMap::key_type state_key(const StateMap&, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// ---- element loops ---------------------------------------------------------------------------------------

// One parameter's scalars for this step, as torch's AdamW derives them (in double, then fp32).
struct Coefficients {
  float grad_scale;       // the gradient is read as rounded(g * grad_scale)
  float decay;            // 1 - lr * weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2;
  float eps;
  float step_size;        // lr / bias_correction1
};

// Stage 1: both moments (and amsgrad's max) stored; the second moment the update divides by, as
// stored, goes to `second` (fp32) for the square root. bf16 values are computed in fp32 with fp32
// coefficients and rounded once, when stored (torch's bf16 ops round after every op and round the
// scalars of mul/add/div, beta1 and 1 - lr * weight_decay among them, to bf16 first).
template <typename T, bool kAmsgrad>
TB_INLINE void moments_body(const T* g, T* m, T* v, T* vmax, float* second, int64_t n, const Coefficients& c) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = rounded<T>(load(g[i]) * c.grad_scale);
    store(m[i], load(m[i]) * c.beta1 + c.one_minus_beta1 * gi);
    const float vi = rounded<T>(load(v[i]) * c.beta2 + c.one_minus_beta2 * gi * gi);
    store(v[i], vi);
    if constexpr (kAmsgrad) {
      const float old = load(vmax[i]);
      const float vm = vi > old ? vi : old;
      store(vmax[i], vm);
      second[i] = vm;
    } else {
      second[i] = vi;
    }
  }
}

// Stage 3: p = p * decay - step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps).
template <typename T>
TB_INLINE void update_body(T* p, const T* m, const float* sqrt_v, int64_t n, const Coefficients& c) {
  for (int64_t i = 0; i < n; ++i) {
    const float denom = sqrt_v[i] / c.sqrt_bias_correction2 + c.eps;
    store(p[i], load(p[i]) * c.decay - c.step_size * load(m[i]) / denom);
  }
}

TB_MULTIVERSION void moments_f32(const float* g, float* m, float* v, float* vmax, float* s, int64_t n,
                                 const Coefficients& c) {
  moments_body<float, false>(g, m, v, vmax, s, n, c);
}
TB_MULTIVERSION void moments_f32_amsgrad(const float* g, float* m, float* v, float* vmax, float* s, int64_t n,
                                         const Coefficients& c) {
  moments_body<float, true>(g, m, v, vmax, s, n, c);
}
TB_MULTIVERSION void moments_bf16(const uint16_t* g, uint16_t* m, uint16_t* v, uint16_t* vmax, float* s, int64_t n,
                                  const Coefficients& c) {
  moments_body<uint16_t, false>(g, m, v, vmax, s, n, c);
}
TB_MULTIVERSION void moments_bf16_amsgrad(const uint16_t* g, uint16_t* m, uint16_t* v, uint16_t* vmax, float* s,
                                          int64_t n, const Coefficients& c) {
  moments_body<uint16_t, true>(g, m, v, vmax, s, n, c);
}
TB_MULTIVERSION void update_f32(float* p, const float* m, const float* s, int64_t n, const Coefficients& c) {
  update_body<float>(p, m, s, n, c);
}
TB_MULTIVERSION void update_bf16(uint16_t* p, const uint16_t* m, const float* s, int64_t n, const Coefficients& c) {
  update_body<uint16_t>(p, m, s, n, c);
}

// Stage 2. std::sqrt does not vectorise here (it may set errno, and the build keeps -fmath-errno),
// so the vector square root is spelled out per instruction set (GCC function multiversioning).
__attribute__((target("avx512f"))) void sqrt_in_place(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_maskz_sqrt_ps(0xFFFF, _mm512_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}
__attribute__((target("avx2"))) void sqrt_in_place(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}
__attribute__((target("default"))) void sqrt_in_place(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}

// ---- the step --------------------------------------------------------------------------------------------

// One parameter's tensors for the fused loop (all contiguous, one dtype).
struct ParamJob {
  torch::Tensor p, g, m, v, vmax;  // vmax undefined without amsgrad
  Coefficients c;
};

// A range of one parameter's elements: the unit of parallel work.
struct Chunk {
  size_t job;
  int64_t begin, end;
};

// Elements per parallel work item, and per pass of the three stages (the fp32 scratch stays in L1).
constexpr int64_t kChunk = int64_t(1) << 15;
constexpr int64_t kBlock = 512;

template <typename T>
T* ptr(const torch::Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

void run_chunk(const ParamJob& job, int64_t begin, int64_t end) {
  float second[kBlock];
  const bool ams = job.vmax.defined();
  const bool bf16 = job.p.scalar_type() == torch::kBFloat16;
  for (int64_t s = begin; s < end; s += kBlock) {
    const int64_t n = std::min(kBlock, end - s);
    if (bf16) {
      using T = uint16_t;
      T *p = ptr<T>(job.p) + s, *m = ptr<T>(job.m) + s, *v = ptr<T>(job.v) + s;
      const T* g = ptr<T>(job.g) + s;
      T* vmax = ams ? ptr<T>(job.vmax) + s : nullptr;
      ams ? moments_bf16_amsgrad(g, m, v, vmax, second, n, job.c) : moments_bf16(g, m, v, vmax, second, n, job.c);
      sqrt_in_place(second, n);
      update_bf16(p, m, second, n, job.c);
    } else {
      float *p = ptr<float>(job.p) + s, *m = ptr<float>(job.m) + s, *v = ptr<float>(job.v) + s;
      const float* g = ptr<float>(job.g) + s;
      float* vmax = ams ? ptr<float>(job.vmax) + s : nullptr;
      ams ? moments_f32_amsgrad(g, m, v, vmax, second, n, job.c) : moments_f32(g, m, v, vmax, second, n, job.c);
      sqrt_in_place(second, n);
      update_f32(p, m, second, n, job.c);
    }
  }
}

bool fusable(const std::vector<torch::Tensor>& tensors) {
  const auto dtype = tensors.front().scalar_type();
  if (dtype != torch::kFloat && dtype != torch::kBFloat16) return false;
  for (const auto& t : tensors)
    if (t.defined() && (t.scalar_type() != dtype || !t.is_contiguous() || !t.device().is_cpu() || t.is_sparse()))
      return false;
  return true;
}

// A parameter the fused loop does not take (another dtype or device, strided memory): the update as
// composed tensor ops, in the order torch's AdamW applies them.
void composed_update(torch::Tensor& p, torch::Tensor g, AdamWParamState& state, const AdamWOptions& o,
                     double bias_correction1, double bias_correction2, double grad_scale) {
  if (grad_scale != 1.0) g = g * grad_scale;
  if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
  const auto [beta1, beta2] = o.betas();
  state.exp_avg().mul_(beta1).add_(g, 1 - beta1);
  state.exp_avg_sq().mul_(beta2).addcmul_(g, g, 1 - beta2);
  torch::Tensor second = state.exp_avg_sq();
  if (o.amsgrad()) {
    torch::max_out(state.max_exp_avg_sq(), state.exp_avg_sq(), state.max_exp_avg_sq());
    second = state.max_exp_avg_sq();
  }
  const auto denom = (second.sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
  p.addcdiv_(state.exp_avg(), denom, -o.lr() / bias_correction1);
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  RECORD_FUNCTION("tb::FusedAdamW::step", std::vector<c10::IValue>());  // named in profiles
  TORCH_CHECK(fused_ || grad_scale_ == 1.0, "FusedAdamW: a gradient scale needs the fused step");
  if (!fused_) return torch::optim::AdamW::step(std::move(closure));
  const double grad_scale = grad_scale_;
  grad_scale_ = 1.0;
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  std::vector<ParamJob> jobs;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& g = p.grad();
      TORCH_CHECK(!g.is_sparse(), "AdamW does not support sparse gradients");
      const auto key = state_key(state_, p);
      auto found = state_.find(key);
      if (found == state_.end()) {
        auto fresh = std::make_unique<AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (o.amsgrad()) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        found = state_.emplace(key, std::move(fresh)).first;
      }
      auto& state = static_cast<AdamWParamState&>(*found->second);
      if (o.amsgrad() && !state.max_exp_avg_sq().defined())
        state.max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      state.step(state.step() + 1);
      const auto [beta1, beta2] = o.betas();
      const double bias_correction1 = 1 - std::pow(beta1, double(state.step()));
      const double bias_correction2 = 1 - std::pow(beta2, double(state.step()));
      const torch::Tensor vmax = o.amsgrad() ? state.max_exp_avg_sq() : torch::Tensor();
      if (!fusable({p, g, state.exp_avg(), state.exp_avg_sq(), vmax})) {
        composed_update(p, g, state, o, bias_correction1, bias_correction2, grad_scale);
        continue;
      }
      ParamJob job{p, g, state.exp_avg(), state.exp_avg_sq(), vmax, {}};
      job.c.grad_scale = float(grad_scale);
      job.c.decay = float(1 - o.lr() * o.weight_decay());
      job.c.beta1 = float(beta1);
      job.c.one_minus_beta1 = float(1 - beta1);
      job.c.beta2 = float(beta2);
      job.c.one_minus_beta2 = float(1 - beta2);
      job.c.sqrt_bias_correction2 = float(std::sqrt(bias_correction2));
      job.c.eps = float(o.eps());
      job.c.step_size = float(o.lr() / bias_correction1);
      jobs.push_back(std::move(job));
    }
  }
  std::vector<Chunk> chunks;
  for (size_t j = 0; j < jobs.size(); ++j)
    for (int64_t b = 0; b < jobs[j].p.numel(); b += kChunk)
      chunks.push_back({j, b, std::min(jobs[j].p.numel(), b + kChunk)});
  at::parallel_for(0, int64_t(chunks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) run_chunk(jobs[chunks[i].job], chunks[i].begin, chunks[i].end);
  });
  // In-place ops bump the version counter; so do the raw writes (autograd sees the parameter change).
  for (auto& job : jobs) job.p.unsafeGetTensorImpl()->bump_version();
  return loss;
}

std::unique_ptr<torch::optim::Optimizer> fuse_optimizer(std::unique_ptr<torch::optim::Optimizer> optimizer) {
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(optimizer.get());
  if (!adamw || dynamic_cast<FusedAdamW*>(adamw)) return optimizer;
  auto fused = std::make_unique<FusedAdamW>(adamw->param_groups(),
                                            static_cast<const AdamWOptions&>(adamw->defaults()));
  fused->state() = std::move(adamw->state());
  return fused;
}

}  // namespace tb::compile
