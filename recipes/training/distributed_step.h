// The step of a data-parallel run: the step it wraps (eager or compiled) computes each micro-batch on
// this process's shard; before the optimizer steps, the trainable parameters' gradients (sums over
// this rank's tokens) are summed over the ranks, so that, divided by the step's tokens summed over the
// ranks (the loop's), every rank applies the update one process would at world_size times the batch.
#pragma once

#include <memory>

#include "distributed/process_group.h"
#include "training/train_step.h"

namespace tb::training {

class DistributedStep : public TrainStep {
 public:
  DistributedStep(std::unique_ptr<TrainStep> step, distributed::ProcessGroup& group);
  at::Tensor forward_backward(const data::TensorBatch& batch) override { return step_->forward_backward(batch); }
  bool last_was_warmup() const override { return step_->last_was_warmup(); }
  // `tokens`: the step's tokens over every rank.
  void optimizer_step(int64_t tokens) override;
  const torch::nn::Module& state_module() const override { return step_->state_module(); }
  torch::optim::Optimizer& optimizer() override { return step_->optimizer(); }
  const std::vector<at::Tensor>& trainable() const override { return step_->trainable(); }
  std::string summary() const override;

 private:
  std::unique_ptr<TrainStep> step_;
  distributed::ProcessGroup& group_;
  double reduce_seconds_ = 0;  // spent summing gradients
  int64_t steps_ = 0;
};

}  // namespace tb::training
