#include "training/compiled_step.h"

#include "compile/fused_adamw.h"
#include "distributed/process_group.h"
#include "compile/fused_kernels.h"
#include "models/activation_checkpointing.h"

namespace tb::training {
namespace {

void log_info(MetricLogger& events, const std::string& text) {
  events.log_event({{"event", "info"}, {"message", text}});
}

}  // namespace

CompiledStep::CompiledStep(models::TransformerDecoder model, const OptimizerFactory& optimizer, StepOptions options,
                           MetricLogger& events)
    : model_(std::move(model)),
      compiled_(compile::wrap_compile(model_)),
      trainable_(trainable_parameters(*model_)),
      optimizer_(compile::fuse_optimizer(optimizer(trainable_))),
      fused_adamw_(dynamic_cast<compile::FusedAdamW*>(optimizer_.get())),
      options_(std::move(options)),
      events_(events) {
  if (fused_adamw_)
    log_info(events_, "compile: AdamW steps fused (one pass over each parameter; torch's AdamW state and checkpoint)");
  else  // e.g. the 8-bit AdamW: its own step() on the gradients scaled as the eager step scales them
    log_info(events_, "compile: the optimizer steps with its own step() (only torch's AdamW has a fused step)");
  log_info(events_, "compile: the step runs fused kernels (" + compile::instruction_set() +
                        "); the first step warms up: it picks the plan and checks the fused step against eager");
}

at::Tensor CompiledStep::warm_up(const data::TensorBatch& batch) {
  // fp32: fused and eager agree to rounding. bf16 is judged against the step in fp32 instead
  // (compile::kErrorFactor), so this tolerance is fp32's only.
  const double tolerance = 1e-3;
  // A data-parallel run computes the plan once: rank 0 chooses it, the other ranks run it.
  distributed::ProcessGroup* group = options_.group;
  std::optional<compile::CompilePlan> rank0_plan;
  if (group && !group->is_main())
    rank0_plan = compile::CompilePlan::from_json(nlohmann::json::parse(group->await("compile_plan"), nullptr, false));
  const auto report = compile::warm_up(*compiled_, batch, options_.loss, trainable_, tolerance,
                                       rank0_plan ? &*rank0_plan : nullptr);
  if (group && group->is_main()) group->publish("compile_plan", report.plan.dump());
  events_.log_event(report.event());
  std::string fallback = report.fallback ? report.reason : "";
  // The ranks step alike: when one falls back, all do.
  if (group && group->sum({report.fallback ? 1.0 : 0.0})[0] > 0 && !report.fallback)
    fallback = "another rank's fused step disagreed with eager";
  if (fallback.empty() && !compiled_->plan.eager_kernels.empty()) {
    std::string pieces;
    for (const auto& piece : compiled_->plan.eager_kernels) pieces += (pieces.empty() ? "" : ", ") + piece;
    events_.log_event({{"event", "warning"},
                       {"message", "compile: the fused " + pieces + " failed the warm-up's check; " + pieces +
                                       " runs as eager ops inside the compiled step, the rest stays fused"}});
  }
  if (!fallback.empty()) {
    fused_ = false;
    if (fused_adamw_) fused_adamw_->set_fused(false);  // the fallen-back run steps as eager, bit for bit
    events_.log_event({{"event", "warning"}, {"message", "compile: falling back to eager: " + fallback}});
  }
  return report.loss_sum;  // its gradients are in place
}

at::Tensor CompiledStep::forward_backward(const data::TensorBatch& batch) {
  last_was_warmup_ = !warmed_up_;
  if (!warmed_up_) {
    warmed_up_ = true;
    return warm_up(batch);
  }
  at::Tensor loss;
  if (!fused_) {
    loss = eager_loss_sum(*model_, batch, options_);
  } else {
    // Activation checkpointing recomputes the eager layers; the fused loss still applies.
    const auto hidden = options_.activation_checkpointing
                            ? models::checkpointed_forward_hidden(*model_, batch.tokens, batch.input_pos)
                            : compiled_->forward_hidden(batch.tokens, batch.input_pos);
    loss = compiled_->token_loss_sum(hidden, batch.labels, options_.loss);
  }
  loss.backward();
  return loss.detach();
}

void CompiledStep::optimizer_step(int64_t tokens) {
  // The fused AdamW reads the gradients scaled by 1/tokens instead of a pass of their own, unless
  // clipping needs them scaled first.
  const bool fold_scale = fused_adamw_ && fused_adamw_->fused() && options_.clip_grad_norm <= 0;
  if (fold_scale) fused_adamw_->set_grad_scale(1.0 / double(std::max<int64_t>(1, tokens)));
  apply_optimizer_step(*optimizer_, trainable_, tokens, options_.clip_grad_norm, fold_scale);
}

}  // namespace tb::training
