#include "training/optimizer_in_backward.h"

#include <torch/torch.h>

#include "data/dataloader.h"

namespace tb::training {

OptimizerInBackwardStep::OptimizerInBackwardStep(std::unique_ptr<TrainStep> step) : WrappedStep(std::move(step)) {
  for (const auto& p : step_->trainable()) hooks_.add(p, [this] { gradient_ready(); });
}

at::Tensor OptimizerInBackwardStep::forward_backward(const data::TensorBatch& batch) {
  tokens_ = (batch.labels != data::kIgnoreIndex).sum().item<int64_t>();
  // No tokens: the loop fails the step, and nothing may have moved before it does.
  armed_ = tokens_ > 0 && !step_->next_is_warmup();
  at::Tensor loss;
  try {
    loss = step_->forward_backward(batch);
  } catch (...) {
    armed_ = false;
    throw;
  }
  stepped_ = armed_;
  armed_ = false;
  return loss;
}

void OptimizerInBackwardStep::gradient_ready() {
  if (armed_) step_->optimizer_step(tokens_);
}

void OptimizerInBackwardStep::optimizer_step(int64_t tokens) {
  if (stepped_) {
    stepped_ = false;
    bool left = false;  // a gradient no hook saw (a parameter without an accumulator): step it too
    for (const auto& p : step_->trainable()) left = left || p.grad().defined();
    if (!left) return;
  }
  step_->optimizer_step(tokens);
}

}  // namespace tb::training
