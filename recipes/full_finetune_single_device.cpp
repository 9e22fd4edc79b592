// full_finetune_single_device: every weight of the model trains. Reads top to bottom like
// torchtune's recipe: setup() builds everything from the config, train() is the loop written out
// (accumulate, normalise by tokens, clip, step, zero, schedule, log, save), save_checkpoint() writes
// one complete checkpoint folder, cleanup() reports how the run ended.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/batch_tensors.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "models/transformer.h"
#include "recipe.h"
#include "training/memory.h"
#include "training/metrics.h"
#include "training/optim.h"
#include "training/recipe_support.h"
#include "training/run_checkpoint.h"

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kRecipeName = "full_finetune_single_device";

class FullFinetuneRecipeSingleDevice {
 public:
  FullFinetuneRecipeSingleDevice(const config::Config& cfg, training::MetricLogger& logger, RunControl& control)
      : cfg_(cfg), logger_(logger), control_(control), registry_(config::Registry::builtin()) {}

  void setup() {
    dtype_ = training::apply_runtime_settings(cfg_);
    training::install_memory_tracking();
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

    // Model and weights. Resuming reads the weights of the checkpoint being resumed.
    model_ = registry_.build<models::TransformerDecoder>(cfg_.at("model"));
    checkpointer_ = registry_.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg_.at("checkpointer"));
    if (cfg_.get_bool("resume_from_checkpoint", false)) resume_dir_ = find_resume_folder();
    auto source = *checkpointer_;
    if (!resume_dir_.empty()) {
      auto options = checkpointer_->options();
      options.checkpoint_dir = resume_dir_;
      options.checkpoint_files.clear();
      source = checkpoint::FullModelHFCheckpointer(options);
    }
    const auto report = source.load_into(*model_, seed_);
    log_info(report.message);
    for (const auto& w : report.warnings) log_info("warning: " + w);
    model_->to(dtype_);

    // Data.
    tokenizer_ = registry_.build<std::shared_ptr<data::Tokenizer>>(cfg_.at("tokenizer"));
    auto dataset = data::build_dataset(registry_, cfg_.at("dataset"), {tokenizer_, model_->args().vocab_size});
    data::DataLoaderOptions loader_options;
    loader_options.batch_size = batch_size_;
    loader_options.shuffle = cfg_.get_bool("shuffle", true);
    loader_options.seed = seed_;
    loader_options.pad_id = tokenizer_->pad_id();
    loader_ = std::make_unique<data::DataLoader>(dataset, loader_options);
    log_info(dataset->description());

    // Optimizer, schedule, loss.
    std::vector<torch::Tensor> params;
    for (auto& p : model_->parameters())
      if (p.requires_grad()) params.push_back(p);
    params_ = params;
    optimizer_ = registry_.build<training::OptimizerFactory>(cfg_.at("optimizer"))(params);
    base_lr_ = training::current_lr(*optimizer_);
    steps_per_epoch_ = loader_->batches_per_epoch() / grad_accum_;
    if (max_steps_per_epoch_ >= 0) steps_per_epoch_ = std::min(steps_per_epoch_, max_steps_per_epoch_);
    total_steps_ = epochs_ * steps_per_epoch_;
    if (has_component("lr_scheduler"))
      lr_lambda_ = registry_.build<training::LrScheduleFactory>(cfg_.at("lr_scheduler"))(total_steps_);
    loss_ = has_component("loss") ? registry_.build<training::LossSpec>(cfg_.at("loss")) : training::LossSpec{};

    if (!resume_dir_.empty()) {
      const auto state = training::load_recipe_state(resume_dir_, *optimizer_);
      global_step_ = state.global_step;
      epochs_run_ = state.epochs_run;
      cursor_ = state.cursor;
      log_info("resumed from " + resume_dir_ + " at step " + std::to_string(global_step_));
    }
    apply_schedule();
  }

  RunResult train() {
    RunResult result;
    bool resumed = !resume_dir_.empty();
    for (int64_t epoch = epochs_run_; epoch < epochs_; ++epoch) {
      loader_->seek(cursor_.epoch == epoch ? cursor_ : data::DataCursor{epoch, 0});
      torch::Tensor running_loss = torch::zeros({}, torch::kFloat64);
      int64_t running_tokens = 0;
      auto step_start = Clock::now();
      if (log_memory_) training::reset_peak_memory();
      while (true) {
        const int64_t batch_index = loader_->cursor().batch_index;
        if (max_steps_per_epoch_ >= 0 && batch_index / grad_accum_ >= max_steps_per_epoch_) break;
        auto batch = loader_->next();
        if (!batch) break;
        const auto t = data::to_tensors(*batch);
        const int64_t tokens = batch->num_label_tokens();
        auto hidden = activation_checkpointing_ ? training::checkpointed_forward_hidden(*model_, t.tokens, t.input_pos)
                                                : model_->forward_hidden(t.tokens, t.input_pos);
        auto loss_sum = training::token_loss_sum(*model_, hidden, t.labels, loss_);
        loss_sum.backward();
        running_loss += loss_sum.detach().to(torch::kFloat64);
        running_tokens += tokens;
        if ((batch_index + 1) % grad_accum_ != 0) continue;

        // Gradients are sums over tokens: normalise once by the tokens of the whole step.
        const double scale = 1.0 / double(std::max<int64_t>(1, running_tokens));
        for (auto& p : params_)
          if (p.grad().defined()) p.grad().mul_(scale);
        if (clip_grad_norm_ > 0) torch::nn::utils::clip_grad_norm_(params_, clip_grad_norm_);
        optimizer_->step();
        optimizer_->zero_grad();
        ++global_step_;
        const double lr = training::current_lr(*optimizer_);
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
          training::StepMetrics m;
          m.step = global_step_;
          m.total_steps = total_steps_;
          m.epoch = epoch;
          m.loss = loss;
          m.lr = lr;
          m.tokens = running_tokens;
          m.step_time_s = seconds;
          m.tokens_per_second = seconds > 0 ? double(running_tokens) / seconds : 0.0;
          m.peak_memory_gib = log_memory_ ? double(training::memory_stats().peak_bytes) / training::kGiB : 0.0;
          m.phase = training::Phase::Steady;
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
        step_start = Clock::now();
        if (log_memory_) training::reset_peak_memory();
      }
      epochs_run_ = epoch + 1;
      cursor_ = {epoch + 1, 0};
      save_checkpoint("epoch_" + std::to_string(epoch), epoch + 1);
    }
    result.status = RunStatus::Completed;
    return finish(result);
  }

  // One complete checkpoint: HF model files, recipe_state.*, then the manifest (written last).
  void save_checkpoint(const std::string& name, int64_t epochs_run) {
    training::RecipeState state{global_step_, epochs_run, cursor_, seed_, total_steps_};
    const auto manifest = training::checkpoint_manifest(cfg_, kRecipeName, global_step_, epochs_run, last_loss_, dtype_);
    const std::string path = training::write_checkpoint_folder(
        output_dir_, name,
        [&](const std::string& folder) {
          checkpointer_->save(folder, *model_);
          training::save_recipe_state(folder, state, *optimizer_);
        },
        manifest);
    last_checkpoint_ = path;
    logger_.log_event({{"event", "checkpoint"}, {"path", path}, {"step", global_step_}});
  }

  RunResult finish(RunResult result) {
    result.steps_done = global_step_;
    result.last_loss = last_loss_;
    result.last_checkpoint = last_checkpoint_;
    return result;
  }

  void cleanup(const RunResult& result) {
    nlohmann::json end = {{"event", "end"}, {"status", to_string(result.status)}, {"step", global_step_}};
    if (!result.message.empty()) end["message"] = result.message;
    logger_.log_event(end);
    logger_.flush();
  }

 private:
  std::string find_resume_folder() const {
    return training::find_resume_folder(checkpointer_->options().checkpoint_dir, output_dir_);
  }

  bool has_component(const std::string& key) const { return training::has_component(cfg_, key); }

  void apply_schedule() {
    if (lr_lambda_) training::set_lr(*optimizer_, base_lr_ * lr_lambda_(global_step_));
  }

  void wait_while_paused() {
    while (control_.pause && !control_.stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  void log_info(const std::string& text) { logger_.log_event({{"event", "info"}, {"message", text}}); }

  const config::Config& cfg_;
  training::MetricLogger& logger_;
  RunControl& control_;
  const config::Registry& registry_;

  torch::ScalarType dtype_ = torch::kFloat32;
  uint64_t seed_ = 0;
  std::string output_dir_;
  int64_t batch_size_ = 1, epochs_ = 1, grad_accum_ = 1, max_steps_per_epoch_ = -1;
  int64_t log_every_ = 1, save_every_ = 0;
  double clip_grad_norm_ = 0;
  bool log_memory_ = true, activation_checkpointing_ = false;

  models::TransformerDecoder model_{nullptr};
  std::shared_ptr<checkpoint::FullModelHFCheckpointer> checkpointer_;
  std::shared_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<data::DataLoader> loader_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  training::LrLambda lr_lambda_;
  training::LossSpec loss_;
  double base_lr_ = 0;

  std::string resume_dir_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, global_step_ = 0, epochs_run_ = 0;
  data::DataCursor cursor_;
  double last_loss_ = std::nan("");
  std::string last_checkpoint_;
};

}  // namespace

RunResult run_full_finetune_single_device(const config::Config& cfg, training::MetricLogger& logger,
                                          RunControl& control) {
  FullFinetuneRecipeSingleDevice recipe(cfg, logger, control);
  RunResult result;
  try {
    recipe.setup();
    result = recipe.train();
  } catch (const std::exception& e) {
    result = recipe.finish(RunResult{RunStatus::Failed, e.what()});
  }
  recipe.cleanup(result);
  return result;
}

}  // namespace tb
