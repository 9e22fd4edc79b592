#include "training/distributed_step.h"

#include <chrono>
#include <cstdio>

#include <torch/torch.h>

namespace tb::training {

DistributedStep::DistributedStep(std::unique_ptr<TrainStep> step, distributed::ProcessGroup& group)
    : step_(std::move(step)), group_(group) {}

void DistributedStep::optimizer_step(int64_t tokens) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> grads;
  for (auto p : step_->trainable()) {
    // A parameter no token of this shard reached has no gradient here but may have one on another rank.
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  group_.all_reduce_sum(grads);
  reduce_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++steps_;
  step_->optimizer_step(tokens);
}

std::string DistributedStep::summary() const {
  if (steps_ == 0) return step_->summary();
  char text[160];
  std::snprintf(text, sizeof text, "all-reduce of the gradients over %d processes: %.3f s per step (%lld steps)",
                group_.size(), reduce_seconds_ / double(steps_), static_cast<long long>(steps_));
  const std::string inner = step_->summary();
  return inner.empty() ? text : inner + "; " + text;
}

}  // namespace tb::training
