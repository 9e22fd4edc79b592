// lora_finetune_single_device: the base model stays frozen and only LoRA adapters train. QLoRA is
// this recipe with a qlora_* model: once the checkpoint is loaded, the adapted base weights are kept in
// NF4. Reads top to bottom like torchtune's recipe: setup() builds the LoRA model, loads the base
// weights (and an adapter, or the adapter of the checkpoint being resumed) and freezes all but the
// adapters; train() is the full recipe's loop; save_checkpoint() writes the PEFT adapter, the merged
// model (unless save_adapter_weights_only) and the recipe state; cleanup() reports how the run ended.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
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
#include "peft/adapter.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "recipe.h"
#include "training/memory.h"
#include "training/metrics.h"
#include "training/optim.h"
#include "training/recipe_support.h"
#include "training/run_checkpoint.h"

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kRecipeName = "lora_finetune_single_device";

class LoRAFinetuneRecipeSingleDevice {
 public:
  LoRAFinetuneRecipeSingleDevice(const config::Config& cfg, training::MetricLogger& logger, RunControl& control)
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

    save_adapter_only_ = cfg_.get_bool("save_adapter_weights_only", false);

    // Model: LoRA layers at the targeted projections.
    model_ = registry_.build<models::TransformerDecoder>(cfg_.at("model"));
    const auto loras = peft::lora_modules(*model_);
    if (loras.empty())
      throw std::runtime_error("model: " + cfg_.get_string("model._component_", "?") +
                               " has no LoRA layers; the LoRA recipe needs a lora_* or qlora_* model");
    lora_rank_ = loras.front().second->rank();
    lora_alpha_ = loras.front().second->alpha();

    // Base weights: always the original checkpoint, also on resume (our checkpoints hold merged
    // weights, which would count the adapter twice); then the adapter of the run being resumed, or
    // checkpointer.adapter_checkpoint.
    checkpointer_ = registry_.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg_.at("checkpointer"));
    if (cfg_.get_bool("resume_from_checkpoint", false))
      resume_dir_ = training::find_resume_folder(checkpointer_->options().checkpoint_dir, output_dir_);
    auto options = checkpointer_->options();
    if (!resume_dir_.empty()) {
      const auto base = base_checkpoint_of(resume_dir_);
      if (base != options.checkpoint_dir) options.checkpoint_files.clear();  // they named other files
      options.checkpoint_dir = base;
    }
    base_checkpointer_ = checkpoint::FullModelHFCheckpointer(options);
    const auto report = base_checkpointer_.load_into(*model_, seed_);
    log_info(report.message);
    for (const auto& w : report.warnings) log_info("warning: " + w);
    const std::string adapter_dir = !resume_dir_.empty() ? resume_dir_ : adapter_checkpoint_dir();
    if (!adapter_dir.empty()) {
      peft::load_adapter_into(*model_, peft::load_peft_adapter(adapter_dir, model_->args()), adapter_dir);
      log_info("loaded the LoRA adapter from " + adapter_dir);
    }
    peft::set_trainable_params(*model_);
    model_->to(dtype_);
    const int64_t quantized = peft::marked_for_quantization(*model_) ? peft::quantize_lora_bases(*model_) : 0;
    if (quantized > 0) log_info("QLoRA: " + std::to_string(quantized) + " base weights stored in NF4");

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
    log_info(memory_line());
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

  // One complete checkpoint: the PEFT adapter, the merged model in the HF layout (unless
  // save_adapter_weights_only), recipe_state.*, then the manifest (written last).
  void save_checkpoint(const std::string& name, int64_t epochs_run) {
    training::RecipeState state{global_step_, epochs_run, cursor_, seed_, total_steps_};
    auto manifest = training::checkpoint_manifest(cfg_, kRecipeName, global_step_, epochs_run, last_loss_, dtype_);
    const auto& base_dir = base_checkpointer_.options().checkpoint_dir;
    manifest["base_checkpoint_dir"] = base_dir ? nlohmann::json(*base_dir) : nlohmann::json();
    manifest["adapter_only"] = save_adapter_only_;
    const std::string path = training::write_checkpoint_folder(
        output_dir_, name,
        [&](const std::string& folder) {
          const auto adapter = peft::adapter_state_dict(*model_);
          peft::AdapterConfig adapter_config;
          adapter_config.rank = lora_rank_;
          adapter_config.alpha = lora_alpha_;
          adapter_config.dropout = peft::lora_modules(*model_).front().second->dropout_p();
          adapter_config.base_model_name_or_path = base_dir.value_or("");
          peft::save_peft_adapter(folder, adapter, model_->args(), adapter_config);
          if (!save_adapter_only_) {
            const auto merged = peft::merge_lora(peft::base_weights(*model_, dtype_), adapter, lora_alpha_, lora_rank_);
            base_checkpointer_.save_state(folder, merged, model_->args());
          }
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
  // The base weights a checkpoint of this recipe was trained on, as its manifest says (null: the
  // seeded random weights, which the same seed rebuilds).
  std::optional<std::string> base_checkpoint_of(const std::string& folder) const {
    const auto manifest = training::read_manifest(folder);
    if (manifest && manifest->contains("base_checkpoint_dir")) {
      const auto& base = (*manifest)["base_checkpoint_dir"];
      return base.is_string() ? std::optional<std::string>(base.get<std::string>()) : std::nullopt;
    }
    const auto& dir = checkpointer_->options().checkpoint_dir;
    if (!dir || *dir == folder) throw std::runtime_error(folder + " does not say which base weights it was trained on");
    return dir;
  }

  // checkpointer.adapter_checkpoint: a PEFT adapter folder (or its adapter_model.safetensors),
  // relative to checkpoint_dir as in torchtune; empty when not set.
  std::string adapter_checkpoint_dir() const {
    const auto& opt = checkpointer_->options();
    if (!opt.adapter_checkpoint || opt.adapter_checkpoint->empty()) return {};
    std::filesystem::path p(*opt.adapter_checkpoint);
    if (p.is_relative() && opt.checkpoint_dir && !std::filesystem::exists(p)) p = std::filesystem::path(*opt.checkpoint_dir) / p;
    if (p.extension() == ".safetensors") p = p.parent_path();
    return p.string();
  }

  // What the weights, gradients and optimizer states of this run take, before it starts.
  std::string memory_line() const {
    const auto bytes = peft::parameter_bytes(*model_);
    const double mib = 1024.0 * 1024.0;
    std::ostringstream line;
    line.precision(3);
    line << "memory: frozen weights " << double(bytes.frozen) / mib << " MiB (" << bytes.frozen_params << " params";
    if (bytes.nf4_params > 0) line << ", " << bytes.nf4_params << " in NF4";
    line << "), trainable weights " << double(bytes.trainable) / mib << " MiB (" << bytes.trainable_params
         << " params), gradients " << double(bytes.trainable) / mib << " MiB, optimizer states "
         << double(training::optimizer_state_bytes(*optimizer_, params_)) / mib << " MiB";
    return line.str();
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

  bool save_adapter_only_ = false;
  int64_t lora_rank_ = 8;
  double lora_alpha_ = 16.0;

  models::TransformerDecoder model_{nullptr};
  std::shared_ptr<checkpoint::FullModelHFCheckpointer> checkpointer_;
  checkpoint::FullModelHFCheckpointer base_checkpointer_{checkpoint::HFCheckpointerOptions{}};
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

RunResult run_lora_finetune_single_device(const config::Config& cfg, training::MetricLogger& logger,
                                          RunControl& control) {
  LoRAFinetuneRecipeSingleDevice recipe(cfg, logger, control);
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
