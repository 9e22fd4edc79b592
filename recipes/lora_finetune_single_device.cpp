// lora_finetune_single_device: the base model stays frozen and only LoRA adapters train. QLoRA is
// this recipe with a qlora_* model: once the checkpoint is loaded, the adapted base weights are kept in
// NF4. Reads top to bottom like torchtune's recipe: setup() builds the LoRA model, loads the base
// weights (and an adapter, or the adapter of the checkpoint being resumed) and freezes all but the
// adapters; train() runs the loop (training/train_loop.h) over the step (eager, or the compile backend);
// save_checkpoint() writes the PEFT adapter, the merged model (unless save_adapter_weights_only) and the
// recipe state; cleanup() reports how the run ended.
#include <filesystem>
#include <optional>

#include "checkpoint/hf_checkpointer.h"
#include "components/builtin.h"
#include "config/schema.h"
#include "models/build_dtype.h"
#include "peft/adapter.h"
#include "peft/adapter_folder.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "recipe.h"
#include "training/recipe_runner.h"
#include "training/recipe_state.h"
#include "training/run_checkpoint.h"
#include "training/run_settings.h"
#include "training/training_run.h"

namespace tb {
namespace {

using training::RunResult;

constexpr const char* kRecipeName = "lora_finetune_single_device";

class LoRAFinetuneRecipeSingleDevice {
 public:
  LoRAFinetuneRecipeSingleDevice(const config::Config& cfg, training::MetricLogger& logger,
                                 training::RunControl& control)
      : cfg_(cfg), logger_(logger), control_(control) {}

  void setup() {
    const config::Registry& registry = components::builtin();
    settings_ = training::read_run_settings(cfg_);
    save_adapter_only_ = config::setting_bool(cfg_, "save_adapter_weights_only");
    checkpointer_ = registry.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg_.at("checkpointer"));
    if (settings_.resume_from_checkpoint)
      resume_dir_ = training::find_resume_folder(checkpointer_->options().checkpoint_dir, settings_.output_dir);
    training::begin_run(settings_, cfg_, resume_dir_, logger_);

    // Model: LoRA layers at the targeted projections, built in the training dtype; QLoRA's bases are
    // quantised to NF4 one by one as the checkpoint is copied in (never the whole model in bf16).
    {
      models::BuildDtype build_dtype(settings_.runtime.dtype);
      peft::NF4OnLoad nf4_on_load;
      model_ = registry.build<models::TransformerDecoder>(cfg_.at("model"));
    }
    const auto loras = peft::lora_modules(*model_);
    if (loras.empty())
      throw std::runtime_error("model: " + cfg_.get_string("model._component_", "?") +
                               " has no LoRA layers; the LoRA recipe needs a lora_* or qlora_* model");
    lora_rank_ = loras.front().second->rank();
    lora_alpha_ = loras.front().second->alpha();

    // Base weights: always the original checkpoint, also on resume (our checkpoints hold merged
    // weights, which would count the adapter twice); then the adapter of the run being resumed, or
    // checkpointer.adapter_checkpoint.
    auto options = checkpointer_->options();
    if (!resume_dir_.empty()) {
      const auto base = base_checkpoint_of(resume_dir_);
      if (base != options.checkpoint_dir) options.checkpoint_files.clear();  // they named other files
      options.checkpoint_dir = base;
    }
    base_checkpointer_ = checkpoint::FullModelHFCheckpointer(options);
    const auto report = base_checkpointer_.load_into(*model_, settings_.runtime.seed);
    training::log_info(logger_, report.message);
    for (const auto& w : report.warnings) training::log_warning(logger_, w);
    const std::string adapter_dir = !resume_dir_.empty() ? resume_dir_ : adapter_checkpoint_dir();
    if (!adapter_dir.empty()) {
      peft::load_adapter_into(*model_, peft::load_peft_adapter(adapter_dir, model_->args()), adapter_dir);
      training::log_info(logger_, "loaded the LoRA adapter from " + adapter_dir);
    }
    peft::set_trainable_params(*model_);
    model_->to(settings_.runtime.dtype);
    const int64_t quantized = peft::marked_for_quantization(*model_) ? peft::quantize_lora_bases(*model_) : 0;
    if (quantized > 0)
      training::log_info(logger_, "QLoRA: " + std::to_string(quantized) + " base weights stored in NF4");

    // Data, step, optimizer and loop; only the adapters require grad.
    run_.emplace(cfg_, registry, settings_, model_, resume_dir_, logger_, control_);
  }

  RunResult train() {
    return run_->train([this](const std::string& name, int64_t epochs_run) { save_checkpoint(name, epochs_run); });
  }

  // One complete checkpoint: the PEFT adapter, the merged model in the HF layout (unless
  // save_adapter_weights_only), recipe_state.*, then the manifest (written last).
  void save_checkpoint(const std::string& name, int64_t epochs_run) {
    const training::RecipeState state = run_->state(epochs_run);
    auto manifest = run_->manifest(kRecipeName, epochs_run);
    const auto& base_dir = base_checkpointer_.options().checkpoint_dir;
    manifest["base_checkpoint_dir"] = base_dir ? nlohmann::json(*base_dir) : nlohmann::json();
    manifest["adapter_only"] = save_adapter_only_;
    run_->write_checkpoint(name, manifest, [&](const std::string& folder) {
      const auto adapter = peft::adapter_state_dict(*model_);
      peft::AdapterConfig adapter_config;
      adapter_config.rank = lora_rank_;
      adapter_config.alpha = lora_alpha_;
      adapter_config.dropout = peft::lora_modules(*model_).front().second->dropout_p();
      adapter_config.base_model_name_or_path = base_dir.value_or("");
      peft::save_peft_adapter(folder, adapter, model_->args(), adapter_config);
      if (!save_adapter_only_) {
        // Each merged weight is made as its shard is written (torchtune's low_cpu_ram, always).
        const auto merged =
            peft::merge_lora(peft::lazy_base_weights(*model_, settings_.runtime.dtype), adapter, lora_alpha_, lora_rank_);
        base_checkpointer_.save_state(folder, merged, model_->args());
      }
      training::save_recipe_state(folder, state, run_->step().optimizer());
    });
  }

  RunResult cleanup(RunResult result) { return training::end_run(result, run_ ? &*run_ : nullptr, logger_); }

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

  std::string adapter_checkpoint_dir() const {
    const auto& opt = checkpointer_->options();
    return peft::adapter_folder(opt.adapter_checkpoint, opt.checkpoint_dir);
  }

  const config::Config& cfg_;
  training::MetricLogger& logger_;
  training::RunControl& control_;
  training::RunSettings settings_;
  bool save_adapter_only_ = false;
  int64_t lora_rank_ = 8;
  double lora_alpha_ = 16.0;
  std::shared_ptr<checkpoint::FullModelHFCheckpointer> checkpointer_;
  checkpoint::FullModelHFCheckpointer base_checkpointer_{checkpoint::HFCheckpointerOptions{}};
  std::string resume_dir_;  // the checkpoint being resumed; empty for a fresh run
  models::TransformerDecoder model_{nullptr};
  std::optional<training::TrainingRun> run_;
};

}  // namespace

RunResult run_lora_finetune_single_device(const config::Config& cfg, training::MetricLogger& logger,
                                          training::RunControl& control) {
  LoRAFinetuneRecipeSingleDevice recipe(cfg, logger, control);
  return training::run_recipe(recipe);
}

}  // namespace tb
