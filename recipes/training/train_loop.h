// The single-device training loop, written out once: micro-batches through the step, accumulate, an
// optimizer step every gradient_accumulation_steps, the learning-rate schedule, metrics, checkpoints,
// pause and stop. It knows nothing of how a step is computed (training/train_step.h) or what a
// checkpoint holds (the recipe's save function).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "data/dataloader.h"
#include "training/metrics.h"
#include "training/optim.h"
#include "training/profiler_schedule.h"
#include "training/recipe_state.h"
#include "training/run_control.h"
#include "training/train_step.h"

namespace tb::distributed {
class ProcessGroup;
}

namespace tb::training {

struct LoopOptions {
  int64_t epochs = 1;
  int64_t gradient_accumulation_steps = 1;
  std::optional<int64_t> max_steps_per_epoch;  // nullopt: whole epochs
  int64_t log_every_n_steps = 1;
  int64_t save_every_n_steps = 0;  // 0: at epoch ends only
  bool log_peak_memory_stats = false;
};

// Writes the checkpoint folder `name` (step_N, epoch_N) of a run that has completed `epochs_run` epochs.
using SaveCheckpoint = std::function<void(const std::string& name, int64_t epochs_run)>;

class TrainLoop {
 public:
  // Only whole optimizer steps run: an epoch has min(batches_per_epoch / gradient_accumulation_steps,
  // max_steps_per_epoch) of them, and micro-batches past its last step are not read.
  TrainLoop(LoopOptions options, int64_t batches_per_epoch, MetricLogger& logger, RunControl& control);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t total_steps() const { return options_.epochs * steps_per_epoch_; }

  // The learning rate is base_lr * schedule(step) after every step (torch's LambdaLR); none: constant.
  void set_schedule(LrLambda schedule, double base_lr);
  // Traces the steps the profiler's schedule names (training/profiler_schedule.h); off by default.
  void set_profiler(ProfilerOptions options) { profiler_ = std::move(options); }
  // Data parallel: each step's loss, tokens and stop request are summed over the group's ranks, so every
  // rank logs the global loss, scales by the global tokens and stops at the same step.
  void set_process_group(distributed::ProcessGroup* group) { group_ = group; }
  // Continues a run where its checkpoint's counters say.
  void resume_from(const RecipeState& state);

  // Runs the remaining epochs: checkpoints every save_every_n_steps and at each epoch end; returns
  // how it ended (a non-finite loss: Failed; a stop request: Stopped, saved unless save_on_stop is off).
  RunResult run(TrainStep& step, data::DataLoader& loader, const SaveCheckpoint& save);

  // Where the run is, as a checkpoint written now records it.
  RecipeState state(int64_t epochs_run, uint64_t seed) const;
  int64_t global_step() const { return global_step_; }
  double last_loss() const { return last_loss_; }

 private:
  void apply_schedule(torch::optim::Optimizer& optimizer) const;
  void wait_while_paused() const;

  LoopOptions options_;
  MetricLogger& logger_;
  RunControl& control_;
  int64_t steps_per_epoch_ = 0;
  LrLambda schedule_;
  double base_lr_ = 0;
  ProfilerOptions profiler_;
  distributed::ProcessGroup* group_ = nullptr;
  bool resumed_ = false;
  int64_t global_step_ = 0;
  int64_t epochs_run_ = 0;
  data::DataCursor cursor_;
  double last_loss_ = std::nan("");
};

// The loop settings a config holds (the schema's defaults where it is silent).
LoopOptions read_loop_options(const config::Config& cfg);

}  // namespace tb::training
