// Runs code each time backward has accumulated a parameter's gradient: a post hook on the parameter's
// gradient accumulator (LibTorch's autograd API, as torch's DDP reducer uses it). What data-parallel
// sums overlapping backward (distributed_step.h) and optimizer_in_bwd (optimizer_in_backward.h) hang on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::autograd {
struct Node;
}

namespace tb::training {

class GradientReadyHooks {
 public:
  GradientReadyHooks() = default;
  ~GradientReadyHooks();  // removes every hook it added
  GradientReadyHooks(const GradientReadyHooks&) = delete;
  GradientReadyHooks& operator=(const GradientReadyHooks&) = delete;

  // `ready` runs after each backward has added its gradient into param.grad(). False when `param` has
  // no gradient accumulator (not a leaf that requires grad): nothing is added.
  bool add(const at::Tensor& param, std::function<void()> ready);

 private:
  // The accumulators holding our hooks (kept alive: a parameter holds its own only weakly) and each
  // hook's key.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;
};

}  // namespace tb::training
