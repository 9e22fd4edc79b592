// The compiled step's optimizer: torch::optim::AdamW with the update done in one fused pass per
// parameter instead of torch's chain of whole-tensor ops. It *is* a torch AdamW (same options, same
// AdamWParamState objects under the same keys, AdamW's own save/load), so a checkpoint written by a
// compiled run resumes an eager one and back. Only step() differs: decoupled weight decay, both
// moments, amsgrad's running max, bias corrections and the parameter update are one loop over each
// chunk of the parameter's memory, all chunks of all parameters in parallel (at::parallel_for), in
// fp32 arithmetic. bf16 parameters keep bf16 moments, as torch's AdamW creates them.
#pragma once

#include <memory>

#include <torch/optim.h>

namespace tb::compile {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  torch::Tensor step(LossClosure closure = nullptr) override;

  // false: step() is torch's AdamW::step itself (a compiled run that fell back to eager).
  void set_fused(bool fused) { fused_ = fused; }
  bool fused() const { return fused_; }

  // The next step() reads every gradient multiplied by `scale` in fp32 and rounded to the gradient's
  // dtype (for fp32 gradients exactly what grad.mul_(scale) leaves; LibTorch 1.13's bf16 mul_ rounds
  // the scale itself to bf16 first): the recipe's 1/tokens normalisation, folded into the step instead
  // of a pass of its own. Back to 1 after that step. Only for the fused step.
  void set_grad_scale(double scale) { grad_scale_ = scale; }

 private:
  bool fused_ = true;
  double grad_scale_ = 1.0;
};

// `optimizer` itself unless it is a torch AdamW; then a FusedAdamW with its param groups, options
// and state (moved over).
std::unique_ptr<torch::optim::Optimizer> fuse_optimizer(std::unique_ptr<torch::optim::Optimizer> optimizer);

}  // namespace tb::compile
