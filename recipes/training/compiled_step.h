// The training step of `compile: true`: the compile backend (compile/) behind the step seam. The model
// is wrapped as torch.compile wraps it (compile/compiled_decoder.h), AdamW steps in one fused pass per
// parameter (compile/fused_adamw.h), and the first micro-batch is the measured warm-up: it picks the
// plan and checks the fused step against eager, falling back to the eager step (optimizer included)
// for the rest of the run when they disagree.
#pragma once

#include "compile/compiled_decoder.h"
#include "training/train_step.h"

namespace tb::compile {
class FusedAdamW;
}

namespace tb::training {

class CompiledStep : public TrainStep {
 public:
  // Logs what the backend will do; `events` also hears the warm-up and any fallback.
  CompiledStep(models::TransformerDecoder model, const OptimizerFactory& optimizer, StepOptions options,
               MetricLogger& events);
  at::Tensor forward_backward(const data::TensorBatch& batch) override;
  bool last_was_warmup() const override { return last_was_warmup_; }
  bool next_is_warmup() const override { return !warmed_up_; }
  void optimizer_step(int64_t tokens) override;
  const torch::nn::Module& state_module() const override { return *compiled_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  const std::vector<at::Tensor>& trainable() const override { return trainable_; }

 private:
  at::Tensor warm_up(const data::TensorBatch& batch);

  models::TransformerDecoder model_;
  compile::CompiledDecoder compiled_;
  std::vector<at::Tensor> trainable_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  compile::FusedAdamW* fused_adamw_ = nullptr;  // optimizer_ itself when it is an AdamW
  StepOptions options_;
  MetricLogger& events_;
  bool fused_ = true;  // the fused kernels run (false after a fallback)
  bool warmed_up_ = false;
  bool last_was_warmup_ = false;
};

}  // namespace tb::training
