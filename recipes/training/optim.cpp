#include "training/optim.h"

#include <algorithm>
#include <cmath>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace tb::training {

LrLambda cosine_with_warmup(int64_t num_warmup_steps, int64_t num_training_steps, double num_cycles) {
  return [=](int64_t step) {
    if (step < num_warmup_steps) return double(step) / double(std::max<int64_t>(1, num_warmup_steps));
    const double progress =
        double(step - num_warmup_steps) / double(std::max<int64_t>(1, num_training_steps - num_warmup_steps));
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * num_cycles * 2.0 * progress));
    return std::max(0.0, cosine);
  };
}

double current_lr(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params) {
  int64_t param_bytes = 0;
  for (const auto& p : params) param_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  const auto& group = optimizer.param_groups().front().options();
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&group))
    return param_bytes * (adamw->amsgrad() ? 3 : 2);
  if (const auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&group))
    return param_bytes * (adam->amsgrad() ? 3 : 2);
  if (const auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&group)) return sgd->momentum() > 0 ? param_bytes : 0;
  return 0;
}

}  // namespace tb::training
