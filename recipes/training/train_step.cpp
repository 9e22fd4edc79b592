#include "training/train_step.h"

#include <algorithm>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include "models/activation_checkpointing.h"
#include "training/compiled_step.h"
#include "training/distributed_step.h"
#include "training/optimizer_in_backward.h"

namespace tb::training {

std::vector<at::Tensor> trainable_parameters(const torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

at::Tensor eager_loss_sum(models::TransformerDecoderImpl& model, const data::TensorBatch& batch,
                          const StepOptions& options) {
  const auto hidden = options.activation_checkpointing
                          ? models::checkpointed_forward_hidden(model, batch.tokens, batch.input_pos)
                          : model.forward_hidden(batch.tokens, batch.input_pos);
  return models::token_loss_sum(model, hidden, batch.labels, options.loss);
}

void apply_optimizer_step(torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& trainable, int64_t tokens,
                          double clip_grad_norm, bool scaled_by_optimizer) {
  // Gradients are sums over tokens: normalised once by the tokens of the whole step.
  const double scale = 1.0 / double(std::max<int64_t>(1, tokens));
  if (!scaled_by_optimizer)
    for (const auto& p : trainable)
      if (p.grad().defined()) p.grad().mul_(scale);
  if (clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(trainable, clip_grad_norm);
  optimizer.step();
  for (auto p : trainable) p.mutable_grad() = at::Tensor();
}

EagerStep::EagerStep(models::TransformerDecoder model, const OptimizerFactory& optimizer, StepOptions options)
    : model_(std::move(model)),
      trainable_(trainable_parameters(*model_)),
      optimizer_(optimizer(trainable_)),
      options_(std::move(options)) {}

at::Tensor EagerStep::forward_backward(const data::TensorBatch& batch) {
  auto loss = eager_loss_sum(*model_, batch, options_);
  loss.backward();
  return loss.detach();
}

void EagerStep::optimizer_step(int64_t tokens) {
  apply_optimizer_step(*optimizer_, trainable_, tokens, options_.clip_grad_norm);
}

std::unique_ptr<TrainStep> make_train_step(models::TransformerDecoder model, const OptimizerFactory& optimizer,
                                           const StepOptions& options, MetricLogger& events) {
  std::unique_ptr<TrainStep> step;
  if (options.compile)
    step = std::make_unique<CompiledStep>(std::move(model), optimizer, options, events);
  else
    step = std::make_unique<EagerStep>(std::move(model), optimizer, options);
  if (options.group)
    step = std::make_unique<DistributedStep>(std::move(step), *options.group, options.gradient_accumulation_steps);
  else if (options.optimizer_in_backward)
    step = std::make_unique<OptimizerInBackwardStep>(std::move(step));
  return step;
}

}  // namespace tb::training
