// Optimizers and learning-rate schedules, as products of their config components.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/optim/optimizer.h>

namespace tb::training {

// `optimizer:` builds an optimizer over the trainable parameters the recipe hands it.
using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor> params)>;

// Multiplier of the base learning rate at a given optimizer step (0-based), as torch's LambdaLR.
using LrLambda = std::function<double(int64_t step)>;
// `lr_scheduler:` needs the run's total number of optimizer steps, known only once data is loaded.
using LrScheduleFactory = std::function<LrLambda(int64_t num_training_steps)>;

// torchtune's get_cosine_schedule_with_warmup: linear warm-up from 0, then a cosine decay with
// `num_cycles` (0.5 = half a cosine, from 1 to 0 over the remaining steps).
LrLambda cosine_with_warmup(int64_t num_warmup_steps, int64_t num_training_steps, double num_cycles = 0.5);

// The optimizer's current learning rate (of its first param group).
double current_lr(const torch::optim::Optimizer& optimizer);
void set_lr(torch::optim::Optimizer& optimizer, double lr);

// Bytes the optimizer's state will take for `params` once it has stepped (the state is created
// lazily): AdamW/Adam two moments per element (three with amsgrad), SGD one with momentum.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params);

}  // namespace tb::training
