#include "training/train_loop.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "config/schema.h"
#include "distributed/process_group.h"
#include "training/memory.h"

namespace tb::training {

using Clock = std::chrono::steady_clock;

LoopOptions read_loop_options(const config::Config& cfg) {
  LoopOptions o;
  o.epochs = config::setting_int(cfg, "epochs");
  o.gradient_accumulation_steps = std::max<int64_t>(1, config::setting_int(cfg, "gradient_accumulation_steps"));
  o.max_steps_per_epoch = config::setting_optional_int(cfg, "max_steps_per_epoch");
  o.log_every_n_steps = std::max<int64_t>(1, config::setting_int(cfg, "log_every_n_steps"));
  o.save_every_n_steps = config::setting_optional_int(cfg, "save_every_n_steps").value_or(0);
  o.log_peak_memory_stats = config::setting_bool(cfg, "log_peak_memory_stats");
  return o;
}

TrainLoop::TrainLoop(LoopOptions options, int64_t batches_per_epoch, MetricLogger& logger, RunControl& control)
    : options_(std::move(options)), logger_(logger), control_(control) {
  steps_per_epoch_ = batches_per_epoch / options_.gradient_accumulation_steps;
  // Otherwise the run "completes" without one optimizer step and saves the weights it started from.
  if (steps_per_epoch_ == 0)
    throw std::runtime_error("an epoch has " + std::to_string(batches_per_epoch) + " batch" +
                             (batches_per_epoch == 1 ? "" : "es") + ", fewer than gradient_accumulation_steps (" +
                             std::to_string(options_.gradient_accumulation_steps) +
                             "): no optimizer step would run; lower gradient_accumulation_steps or batch_size, or add data");
  if (options_.max_steps_per_epoch) steps_per_epoch_ = std::min(steps_per_epoch_, *options_.max_steps_per_epoch);
}

void TrainLoop::set_schedule(LrLambda schedule, double base_lr) {
  schedule_ = std::move(schedule);
  base_lr_ = base_lr;
}

void TrainLoop::resume_from(const RecipeState& state) {
  resumed_ = true;
  global_step_ = state.global_step;
  epochs_run_ = state.epochs_run;
  cursor_ = state.cursor;
}

RecipeState TrainLoop::state(int64_t epochs_run, uint64_t seed) const {
  return RecipeState{global_step_, epochs_run, cursor_, seed, total_steps()};
}

void TrainLoop::apply_schedule(torch::optim::Optimizer& optimizer) const {
  if (schedule_) set_lr(optimizer, base_lr_ * schedule_(global_step_));
}

void TrainLoop::wait_while_paused() const {
  while (control_.pause && !control_.stop) {
    control_.held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  control_.held = false;
}

RunResult TrainLoop::run(TrainStep& step, data::DataLoader& loader, const SaveCheckpoint& save) {
  RunResult result;
  StepProfiler profiler(profiler_, logger_);  // writes a trace it holds on any return
  bool resumed = resumed_;
  apply_schedule(step.optimizer());
  const int64_t accumulation = options_.gradient_accumulation_steps;
  const int64_t batches = steps_per_epoch_ * accumulation;  // the micro-batches of an epoch's whole steps
  for (int64_t epoch = epochs_run_; epoch < options_.epochs; ++epoch) {
    loader.seek(cursor_.epoch == epoch ? cursor_ : data::DataCursor{epoch, 0});
    at::Tensor running_loss = at::zeros({}, at::kDouble);
    int64_t running_tokens = 0;
    auto step_start = Clock::now();
    bool warmup_step = false;  // this optimizer step holds the compile warm-up
    if (options_.log_peak_memory_stats) reset_peak_memory();
    while (loader.cursor().batch_index < batches) {
      const int64_t batch_index = loader.cursor().batch_index;
      auto batch = loader.next();
      if (!batch) break;
      running_loss += step.forward_backward(data::to_tensors(*batch)).to(at::kDouble);
      warmup_step = warmup_step || step.last_was_warmup();
      running_tokens += batch->num_label_tokens();
      if ((batch_index + 1) % accumulation != 0) continue;

      double loss_sum = running_loss.item<double>();
      bool stop = control_.stop;
      if (group_) {  // the step as one process would see it: every rank's loss and tokens
        const auto totals = group_->sum({loss_sum, double(running_tokens), stop ? 1.0 : 0.0});
        loss_sum = totals[0];
        running_tokens = std::llround(totals[1]);
        stop = totals[2] > 0;
      }

      if (running_tokens == 0) {  // the loss would read 0.0000 and the step change nothing but weight decay
        result.status = RunStatus::Failed;
        result.message = "step " + std::to_string(global_step_ + 1) +
                         " has no label tokens: every label is masked (a prompt that fills max_seq_len, or "
                         "train_on_input: false with empty responses?); nothing to learn from";
        return result;
      }
      step.optimizer_step(running_tokens);
      ++global_step_;
      const double lr = current_lr(step.optimizer());
      apply_schedule(step.optimizer());

      const double loss = loss_sum * (1.0 / double(std::max<int64_t>(1, running_tokens)));
      const double seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
      last_loss_ = loss;
      cursor_ = loader.cursor();
      if (!std::isfinite(loss)) {
        result.status = RunStatus::Failed;
        result.message = "loss is " + std::string(std::isnan(loss) ? "nan" : "inf") + " at step " +
                         std::to_string(global_step_) + "; stopping (lower the learning rate?)";
        return result;
      }
      if (global_step_ % options_.log_every_n_steps == 0 || global_step_ == total_steps()) {
        StepMetrics m;
        m.step = global_step_;
        m.total_steps = total_steps();
        m.epoch = epoch;
        m.loss = loss;
        m.lr = lr;
        m.tokens = running_tokens;
        m.step_time_s = seconds;
        m.tokens_per_second = seconds > 0 ? double(running_tokens) / seconds : 0.0;
        m.peak_memory_gib = options_.log_peak_memory_stats ? double(memory_stats().peak_bytes) / kGiB : 0.0;
        m.phase = warmup_step ? Phase::Warmup : Phase::Steady;
        m.resumed_before = resumed;
        logger_.log_step(m);
        resumed = false;
      }
      profiler.step_done();  // where torchtune calls prof.step(): after the step is logged
      if (options_.save_every_n_steps > 0 && global_step_ % options_.save_every_n_steps == 0)
        save("step_" + std::to_string(global_step_), epoch);
      wait_while_paused();  // returns at once when not paused, or when a stop arrives while paused
      if (group_ ? stop : control_.stop.load()) {  // the ranks stop together, at the step they agreed on
        if (control_.save_on_stop) save("step_" + std::to_string(global_step_), epoch);
        result.status = RunStatus::Stopped;
        return result;
      }
      running_loss.zero_();
      running_tokens = 0;
      warmup_step = false;
      step_start = Clock::now();
      if (options_.log_peak_memory_stats) reset_peak_memory();
    }
    epochs_run_ = epoch + 1;
    cursor_ = {epoch + 1, 0};
    save("epoch_" + std::to_string(epoch), epoch + 1);
  }
  result.status = RunStatus::Completed;
  return result;
}

}  // namespace tb::training
