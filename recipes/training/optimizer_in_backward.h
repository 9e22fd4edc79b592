// optimizer_in_bwd, as torchtune's recipes run it: each trainable parameter steps as soon as backward
// has accumulated its gradient, and that gradient is freed at once, so the gradients of the whole model
// never exist together (a full fine-tune's peak loses one gradient per parameter: 2 bytes per parameter
// in bf16, 4 in fp32, but for the largest single one).
//
// Wraps the eager or compiled step. A hook on each parameter's gradient accumulator (gradient_hooks.h)
// calls the wrapped step's own optimizer_step, which steps the parameters that hold a gradient (only the
// one just made: the others have stepped or are still to come) and drops it; so each parameter gets the
// arithmetic the step after backward gives it, and the losses are the same bit for bit. The gradients
// are divided by the micro-batch's label tokens, known before backward: one micro-batch per optimizer
// step, and no clipping (the norm of all gradients never exists); config/validate refuses both, as
// torchtune does. The compile warm-up (its backward runs twice, to check the fused step) steps after
// backward as usual.
#pragma once

#include <memory>

#include "training/gradient_hooks.h"
#include "training/train_step.h"

namespace tb::training {

class OptimizerInBackwardStep : public WrappedStep {
 public:
  explicit OptimizerInBackwardStep(std::unique_ptr<TrainStep> step);
  at::Tensor forward_backward(const data::TensorBatch& batch) override;
  // The parameters stepped in backward already; a micro-batch that ran without the hooks (the compile
  // warm-up) steps here.
  void optimizer_step(int64_t tokens) override;

 private:
  void gradient_ready();

  int64_t tokens_ = 0;    // the label tokens of the micro-batch in backward
  bool armed_ = false;    // the hooks step (a backward of a micro-batch with tokens, not the warm-up)
  bool stepped_ = false;  // the last micro-batch's parameters stepped in its backward
  GradientReadyHooks hooks_;  // last: removed before the step they call goes
};

}  // namespace tb::training
