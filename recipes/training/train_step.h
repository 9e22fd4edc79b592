// The one seam between the training loop and how a step is computed. The loop hands the step
// micro-batches and asks it for an optimizer step; whether that runs plain LibTorch ops (EagerStep) or
// the compile backend's fused kernels (CompiledStep, with its warm-up, plan, fallback and fused
// optimizer) stays behind this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/batch_tensors.h"
#include "models/loss.h"
#include "models/transformer.h"
#include "training/metrics.h"
#include "training/optim.h"

namespace tb::distributed {
class ProcessGroup;
}

namespace tb::training {

struct StepOptions {
  models::LossSpec loss;
  double clip_grad_norm = 0;  // 0: no clipping
  bool activation_checkpointing = false;
  bool compile = false;  // run the step through the compile backend
  // Data parallel: the gradients are summed over this group's ranks before each optimizer step
  // (training/distributed_step.h), and the compile warm-up's plan is rank 0's. Null: one process.
  distributed::ProcessGroup* group = nullptr;
  int64_t gradient_accumulation_steps = 1;  // micro-batches per optimizer step (when the sums start)
  // optimizer_in_bwd: each parameter steps as soon as backward has made its gradient, which is then
  // freed (training/optimizer_in_backward.h). One process only: a data-parallel run steps after the sums.
  bool optimizer_in_backward = false;
};

class TrainStep {
 public:
  virtual ~TrainStep() = default;
  // Forward, loss and backward of one micro-batch: the trainable parameters' gradients accumulate
  // sums over tokens. Returns the micro-batch's token-summed loss, detached.
  virtual at::Tensor forward_backward(const data::TensorBatch& batch) = 0;
  // Whether the last forward_backward held a warm-up (the compile warm-up), so its time is no steady step's.
  virtual bool last_was_warmup() const { return false; }
  // Whether the next forward_backward will hold one (its backward runs twice, to check the fused step).
  virtual bool next_is_warmup() const { return false; }
  // One optimizer step over the gradients accumulated since the last one: each divided by `tokens`
  // (the step's unmasked tokens), clipped, applied; then the gradients are dropped.
  virtual void optimizer_step(int64_t tokens) = 0;
  // The module whose state a checkpoint holds (names as the eager model's, see models/compiled_names.h).
  virtual const torch::nn::Module& state_module() const = 0;
  virtual torch::optim::Optimizer& optimizer() = 0;
  // The parameters that train (those that require grad), in the model's order.
  virtual const std::vector<at::Tensor>& trainable() const = 0;
  // What the step has to say when the run ends (time spent reducing gradients); empty: nothing.
  virtual std::string summary() const { return {}; }
};

// A step around another (data parallel, optimizer_in_bwd): everything is the wrapped step's but what
// the wrapper overrides.
class WrappedStep : public TrainStep {
 public:
  explicit WrappedStep(std::unique_ptr<TrainStep> step) : step_(std::move(step)) {}
  at::Tensor forward_backward(const data::TensorBatch& batch) override { return step_->forward_backward(batch); }
  bool last_was_warmup() const override { return step_->last_was_warmup(); }
  bool next_is_warmup() const override { return step_->next_is_warmup(); }
  void optimizer_step(int64_t tokens) override { step_->optimizer_step(tokens); }
  const torch::nn::Module& state_module() const override { return step_->state_module(); }
  torch::optim::Optimizer& optimizer() override { return step_->optimizer(); }
  const std::vector<at::Tensor>& trainable() const override { return step_->trainable(); }
  std::string summary() const override { return step_->summary(); }

 protected:
  std::unique_ptr<TrainStep> step_;
};

// The eager step: plain composed LibTorch ops, the honest baseline.
class EagerStep : public TrainStep {
 public:
  EagerStep(models::TransformerDecoder model, const OptimizerFactory& optimizer, StepOptions options);
  at::Tensor forward_backward(const data::TensorBatch& batch) override;
  void optimizer_step(int64_t tokens) override;
  const torch::nn::Module& state_module() const override { return *model_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  const std::vector<at::Tensor>& trainable() const override { return trainable_; }

 private:
  models::TransformerDecoder model_;
  std::vector<at::Tensor> trainable_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  StepOptions options_;
};

// The step `options` asks for: with compile, the compile backend's (training/compiled_step.h), else
// eager. The optimizer is built over the model's trainable parameters; `events` hears what the step
// has to say (the compile warm-up and its plan, a fallback).
std::unique_ptr<TrainStep> make_train_step(models::TransformerDecoder model, const OptimizerFactory& optimizer,
                                           const StepOptions& options, MetricLogger& events);

// The parameters of `model` that require grad.
std::vector<at::Tensor> trainable_parameters(const torch::nn::Module& model);

// The eager forward pass and loss of one micro-batch (token-summed, not yet backpropagated).
at::Tensor eager_loss_sum(models::TransformerDecoderImpl& model, const data::TensorBatch& batch,
                          const StepOptions& options);

// What every optimizer step does around the optimizer itself: the gradients divided by `tokens`
// (unless the optimizer applies that scale itself, `scaled_by_optimizer`), clipped to clip_grad_norm,
// the step, then the gradients dropped rather than zeroed (PyTorch 2's zero_grad default: the next
// backward hands its gradients over instead of adding them to zeros).
void apply_optimizer_step(torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& trainable, int64_t tokens,
                          double clip_grad_norm, bool scaled_by_optimizer = false);

}  // namespace tb::training
