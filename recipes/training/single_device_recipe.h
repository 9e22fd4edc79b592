// What full_finetune_single_device and lora_finetune_single_device share, so each recipe file holds
// only what is its own: the settings every single-device recipe reads, the data and optimizer
// setup, the training loop itself (accumulate, normalise by tokens, clip, step, zero, schedule, log,
// save, stop), and how a run ends. A recipe supplies setup() (model, weights, what trains) and
// save_checkpoint() (what a checkpoint holds). With `compile: true` the loop runs the step through
// the compile wrapper (compile/compiled_decoder.h); its first step is the measured warm-up.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "compile/compiled_decoder.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/batch_tensors.h"
#include "data/dataloader.h"
#include "data/tokenizer.h"
#include "models/transformer.h"
#include "recipe.h"
#include "training/metrics.h"
#include "training/optim.h"

namespace tb::training {

class SingleDeviceRecipe {
 public:
  SingleDeviceRecipe(const config::Config& cfg, MetricLogger& logger, RunControl& control, std::string recipe_name);
  virtual ~SingleDeviceRecipe() = default;

  // Builds everything from the config; throws std::runtime_error with a one-line reason.
  virtual void setup() = 0;
  // The loop, written out; returns how it ended (NaN/inf loss: Failed; a stop request: Stopped).
  RunResult train();
  // The end event and a flush.
  void cleanup(const RunResult& result);
  // `result` with the run's counters filled in.
  RunResult finish(RunResult result) const;

 protected:
  // One complete checkpoint folder named `name` (step_N, epoch_N).
  virtual void save_checkpoint(const std::string& name, int64_t epochs_run) = 0;

  // The first part of every setup(): dtype, threads, seed, output_dir and the loop settings.
  void read_settings();
  // Tokenizer, dataset and data loader (after the model: the dataset may take its vocabulary).
  void setup_data();
  // Optimizer over the parameters that require grad, the memory budget event, step counts, the
  // schedule and the loss; then, when resuming, the recipe state of resume_dir_.
  void setup_optimizer_and_resume();
  // The module whose state a checkpoint holds: the compile wrapper when compiled (its `_orig_mod.`
  // names are stripped on the way out, so the files are the eager model's), else the model.
  const torch::nn::Module& state_module() const;
  // After the checkpoint folder is written: remember it and say so.
  void checkpoint_written(const std::string& path);

  bool has_component(const std::string& key) const;
  void log_info(const std::string& text);

  const config::Config& cfg_;
  MetricLogger& logger_;
  RunControl& control_;
  const config::Registry& registry_;
  const std::string recipe_name_;

  torch::ScalarType dtype_ = torch::kFloat32;
  uint64_t seed_ = 0;
  std::string output_dir_;
  int64_t batch_size_ = 1, epochs_ = 1, grad_accum_ = 1, max_steps_per_epoch_ = -1;
  int64_t log_every_ = 1, save_every_ = 0;
  double clip_grad_norm_ = 0;
  bool log_memory_ = true, activation_checkpointing_ = false;
  bool compile_ = false;

  models::TransformerDecoder model_{nullptr};
  std::shared_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<data::DataLoader> loader_;
  std::vector<torch::Tensor> params_;  // the trainable ones
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  LrLambda lr_lambda_;
  LossSpec loss_;
  double base_lr_ = 0;

  std::string resume_dir_;  // the checkpoint being resumed; empty for a fresh run
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, global_step_ = 0, epochs_run_ = 0;
  data::DataCursor cursor_;
  double last_loss_ = std::nan("");
  std::string last_checkpoint_;

 private:
  // The token-summed loss of one micro-batch, eager or fused; the caller runs backward.
  torch::Tensor forward_loss(const data::TensorBatch& t);
  void apply_schedule();
  void wait_while_paused();

  compile::CompiledDecoder compiled_{nullptr};  // set by compile: true
  bool fused_ = false;                          // the step runs the fused kernels (not after a fallback)
  bool warmed_up_ = false;
};

// setup, train and cleanup, with any exception turned into a Failed result.
RunResult run_recipe(SingleDeviceRecipe& recipe);

}  // namespace tb::training
