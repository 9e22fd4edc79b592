#include "training/single_device_recipe.h"

#include <chrono>
#include <thread>

#include "compile/fused_adamw.h"
#include "compile/fused_kernels.h"
#include "data/dataset.h"
#include "training/memory.h"
#include "training/recipe_support.h"

namespace tb::training {

using Clock = std::chrono::steady_clock;

SingleDeviceRecipe::SingleDeviceRecipe(const config::Config& cfg, MetricLogger& logger, RunControl& control,
                                       std::string recipe_name)
    : cfg_(cfg),
      logger_(logger),
      control_(control),
      registry_(config::Registry::builtin()),
      recipe_name_(std::move(recipe_name)) {}

void SingleDeviceRecipe::read_settings() {
  dtype_ = apply_runtime_settings(cfg_);
  install_memory_tracking();
  seed_ = static_cast<uint64_t>(cfg_.get_int("seed", 0));
  output_dir_ = cfg_.get_string("output_dir", cfg_.get_string("checkpointer.output_dir", ""));
  if (output_dir_.empty()) throw std::runtime_error("output_dir is not set");
  batch_size_ = cfg_.get_int("batch_size", 1);
  epochs_ = cfg_.get_int("epochs", 1);
  grad_accum_ = std::max<int64_t>(1, cfg_.get_int("gradient_accumulation_steps", 1));
  max_steps_per_epoch_ = cfg_.get_int("max_steps_per_epoch", -1);  // null: whole epochs
  log_every_ = std::max<int64_t>(1, cfg_.get_int("log_every_n_steps", 1));
  save_every_ = cfg_.get_int("save_every_n_steps", 0);
  clip_grad_norm_ = cfg_.get_float("clip_grad_norm", 0.0);
  log_memory_ = cfg_.get_bool("log_peak_memory_stats", true);
  activation_checkpointing_ = cfg_.get_bool("enable_activation_checkpointing", false);
  compile_ = cfg_.get_bool("compile", false);
}

void SingleDeviceRecipe::setup_data() {
  tokenizer_ = registry_.build<std::shared_ptr<data::Tokenizer>>(cfg_.at("tokenizer"));
  auto dataset = data::build_dataset(registry_, cfg_.at("dataset"), {tokenizer_, model_->args().vocab_size});
  data::DataLoaderOptions loader_options;
  loader_options.batch_size = batch_size_;
  loader_options.shuffle = cfg_.get_bool("shuffle", true);
  loader_options.seed = seed_;
  loader_options.pad_id = tokenizer_->pad_id();
  loader_ = std::make_unique<data::DataLoader>(dataset, loader_options);
  log_info(dataset->description());
}

void SingleDeviceRecipe::setup_optimizer_and_resume() {
  params_.clear();
  for (auto& p : model_->parameters())
    if (p.requires_grad()) params_.push_back(p);
  optimizer_ = registry_.build<OptimizerFactory>(cfg_.at("optimizer"))(params_);
  if (compile_) {
    optimizer_ = compile::fuse_optimizer(std::move(optimizer_));
    if (dynamic_cast<compile::FusedAdamW*>(optimizer_.get()))
      log_info("compile: AdamW steps fused (one pass over each parameter; torch's AdamW state and checkpoint)");
  }
  base_lr_ = current_lr(*optimizer_);
  logger_.log_event(memory_budget_event(*model_, *optimizer_, params_));
  steps_per_epoch_ = loader_->batches_per_epoch() / grad_accum_;
  if (max_steps_per_epoch_ >= 0) steps_per_epoch_ = std::min(steps_per_epoch_, max_steps_per_epoch_);
  total_steps_ = epochs_ * steps_per_epoch_;
  if (has_component("lr_scheduler"))
    lr_lambda_ = registry_.build<LrScheduleFactory>(cfg_.at("lr_scheduler"))(total_steps_);
  loss_ = has_component("loss") ? registry_.build<LossSpec>(cfg_.at("loss")) : LossSpec{};

  if (!resume_dir_.empty()) {
    const auto state = load_recipe_state(resume_dir_, *optimizer_);
    global_step_ = state.global_step;
    epochs_run_ = state.epochs_run;
    cursor_ = state.cursor;
    log_info("resumed from " + resume_dir_ + " at step " + std::to_string(global_step_));
  }
  apply_schedule();
  if (compile_) {
    compiled_ = compile::wrap_compile(model_);
    fused_ = true;
    log_info("compile: the step runs fused kernels (" + compile::instruction_set() +
             "); the first step warms up: it picks the plan and checks the fused step against eager");
  }
}

torch::Tensor SingleDeviceRecipe::forward_loss(const data::TensorBatch& t) {
  if (fused_) {
    // Activation checkpointing recomputes the eager layers; the fused loss still applies.
    auto hidden = activation_checkpointing_ ? checkpointed_forward_hidden(*model_, t.tokens, t.input_pos)
                                            : compiled_->forward_hidden(t.tokens, t.input_pos);
    return compiled_->token_loss_sum(hidden, t.labels, loss_);
  }
  auto hidden = activation_checkpointing_ ? checkpointed_forward_hidden(*model_, t.tokens, t.input_pos)
                                          : model_->forward_hidden(t.tokens, t.input_pos);
  return token_loss_sum(*model_, hidden, t.labels, loss_);
}

RunResult SingleDeviceRecipe::train() {
  RunResult result;
  bool resumed = !resume_dir_.empty();
  for (int64_t epoch = epochs_run_; epoch < epochs_; ++epoch) {
    loader_->seek(cursor_.epoch == epoch ? cursor_ : data::DataCursor{epoch, 0});
    torch::Tensor running_loss = torch::zeros({}, torch::kFloat64);
    int64_t running_tokens = 0;
    auto step_start = Clock::now();
    bool warmup_step = false;  // this step holds the compile warm-up
    if (log_memory_) reset_peak_memory();
    while (true) {
      const int64_t batch_index = loader_->cursor().batch_index;
      if (max_steps_per_epoch_ >= 0 && batch_index / grad_accum_ >= max_steps_per_epoch_) break;
      auto batch = loader_->next();
      if (!batch) break;
      const auto t = data::to_tensors(*batch);
      const int64_t tokens = batch->num_label_tokens();
      torch::Tensor loss_sum;
      if (compiled_ && !warmed_up_) {
        // fp32 sums agree to rounding; bf16 keeps 8 bits of mantissa.
        const double tolerance = dtype_ == torch::kFloat32 ? 1e-3 : 5e-2;
        const auto report = compile::warm_up(*compiled_, t, loss_, params_, tolerance);
        warmed_up_ = true;
        warmup_step = true;
        fused_ = !report.fallback;
        logger_.log_event(report.event());
        if (report.fallback) logger_.log_event({{"event", "warning"}, {"message", "compile: falling back to eager: " + report.reason}});
        if (auto* fused_adamw = dynamic_cast<compile::FusedAdamW*>(optimizer_.get()); fused_adamw && report.fallback)
          fused_adamw->set_fused(false);  // the fallen-back run steps as eager, bit for bit
        loss_sum = report.loss_sum;  // its gradients are in place
      } else {
        loss_sum = forward_loss(t);
        loss_sum.backward();
      }
      running_loss += loss_sum.detach().to(torch::kFloat64);
      running_tokens += tokens;
      if ((batch_index + 1) % grad_accum_ != 0) continue;

      // Gradients are sums over tokens: normalise once by the tokens of the whole step (the fused
      // AdamW reads them scaled, unless clipping needs them scaled first).
      const double scale = 1.0 / double(std::max<int64_t>(1, running_tokens));
      auto* fused_adamw = dynamic_cast<compile::FusedAdamW*>(optimizer_.get());
      if (fused_adamw && fused_adamw->fused() && clip_grad_norm_ <= 0) {
        fused_adamw->set_grad_scale(scale);
      } else {
        for (auto& p : params_)
          if (p.grad().defined()) p.grad().mul_(scale);
      }
      if (clip_grad_norm_ > 0) torch::nn::utils::clip_grad_norm_(params_, clip_grad_norm_);
      optimizer_->step();
      // Dropped, not zeroed (PyTorch 2's zero_grad default): the next backward hands its gradients
      // over instead of adding them to zeros, a pass fewer over every gradient, eager or compiled.
      for (auto& p : params_) p.mutable_grad() = torch::Tensor();
      ++global_step_;
      const double lr = current_lr(*optimizer_);
      apply_schedule();

      const double loss = running_loss.item<double>() * scale;
      const double seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
      last_loss_ = loss;
      cursor_ = loader_->cursor();
      if (!std::isfinite(loss)) {
        result.status = RunStatus::Failed;
        result.message = "loss is " + std::string(std::isnan(loss) ? "nan" : "inf") + " at step " +
                         std::to_string(global_step_) + "; stopping (lower the learning rate?)";
        return finish(result);
      }
      if (global_step_ % log_every_ == 0 || global_step_ == total_steps_) {
        StepMetrics m;
        m.step = global_step_;
        m.total_steps = total_steps_;
        m.epoch = epoch;
        m.loss = loss;
        m.lr = lr;
        m.tokens = running_tokens;
        m.step_time_s = seconds;
        m.tokens_per_second = seconds > 0 ? double(running_tokens) / seconds : 0.0;
        m.peak_memory_gib = log_memory_ ? double(memory_stats().peak_bytes) / kGiB : 0.0;
        m.phase = warmup_step ? Phase::Warmup : Phase::Steady;
        m.resumed_before = resumed;
        logger_.log_step(m);
        resumed = false;
      }
      if (save_every_ > 0 && global_step_ % save_every_ == 0) save_checkpoint("step_" + std::to_string(global_step_), epoch);
      wait_while_paused();  // returns at once when not paused, or when a stop arrives while paused
      if (control_.stop) {
        if (control_.save_on_stop) save_checkpoint("step_" + std::to_string(global_step_), epoch);
        result.status = RunStatus::Stopped;
        return finish(result);
      }
      running_loss.zero_();
      running_tokens = 0;
      warmup_step = false;
      step_start = Clock::now();
      if (log_memory_) reset_peak_memory();
    }
    epochs_run_ = epoch + 1;
    cursor_ = {epoch + 1, 0};
    save_checkpoint("epoch_" + std::to_string(epoch), epoch + 1);
  }
  result.status = RunStatus::Completed;
  return finish(result);
}

RunResult SingleDeviceRecipe::finish(RunResult result) const {
  result.steps_done = global_step_;
  result.last_loss = last_loss_;
  result.last_checkpoint = last_checkpoint_;
  return result;
}

void SingleDeviceRecipe::cleanup(const RunResult& result) {
  nlohmann::json end = {{"event", "end"}, {"status", to_string(result.status)}, {"step", global_step_}};
  if (!result.message.empty()) end["message"] = result.message;
  logger_.log_event(end);
  logger_.flush();
}

const torch::nn::Module& SingleDeviceRecipe::state_module() const {
  if (compiled_) return *compiled_;
  return *model_;
}

void SingleDeviceRecipe::checkpoint_written(const std::string& path) {
  last_checkpoint_ = path;
  logger_.log_event({{"event", "checkpoint"}, {"path", path}, {"step", global_step_}});
}

bool SingleDeviceRecipe::has_component(const std::string& key) const { return training::has_component(cfg_, key); }

void SingleDeviceRecipe::log_info(const std::string& text) {
  logger_.log_event({{"event", "info"}, {"message", text}});
}

void SingleDeviceRecipe::apply_schedule() {
  if (lr_lambda_) set_lr(*optimizer_, base_lr_ * lr_lambda_(global_step_));
}

void SingleDeviceRecipe::wait_while_paused() {
  while (control_.pause && !control_.stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

RunResult run_recipe(SingleDeviceRecipe& recipe) {
  RunResult result;
  try {
    recipe.setup();
    result = recipe.train();
  } catch (const std::exception& e) {
    RunResult failed;
    failed.status = RunStatus::Failed;
    failed.message = e.what();
    result = recipe.finish(failed);
  }
  recipe.cleanup(result);
  return result;
}

}  // namespace tb::training
