// full_finetune_single_device: every weight of the model trains. Reads top to bottom like torchtune's
// recipe: setup() builds everything from the config, train() runs the loop (training/train_loop.h) over
// the step (eager, or the compile backend with compile: true), save_checkpoint() writes one complete
// checkpoint folder, cleanup() reports how the run ended.
#include <optional>

#include "checkpoint/hf_checkpointer.h"
#include "components/builtin.h"
#include "models/build_dtype.h"
#include "recipe.h"
#include "training/recipe_runner.h"
#include "training/recipe_state.h"
#include "training/run_checkpoint.h"
#include "training/run_settings.h"
#include "training/training_run.h"

namespace tb {
namespace {

using training::RunResult;

constexpr const char* kRecipeName = "full_finetune_single_device";

class FullFinetuneRecipeSingleDevice {
 public:
  FullFinetuneRecipeSingleDevice(const config::Config& cfg, training::MetricLogger& logger,
                                 training::RunControl& control)
      : cfg_(cfg), logger_(logger), control_(control) {}

  void setup() {
    const config::Registry& registry = components::builtin();
    settings_ = training::read_run_settings(cfg_);
    checkpointer_ = registry.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg_.at("checkpointer"));
    if (settings_.resume_from_checkpoint)
      resume_dir_ = training::find_resume_folder(checkpointer_->options().checkpoint_dir, settings_.output_dir);
    training::begin_run(settings_, cfg_, resume_dir_, logger_);

    // Model and weights. Resuming reads the weights of the checkpoint being resumed.
    {
      models::BuildDtype build_dtype(settings_.runtime.dtype);  // never the whole model in fp32 first
      model_ = registry.build<models::TransformerDecoder>(cfg_.at("model"));
    }
    auto source = checkpointer_->options();
    if (!resume_dir_.empty()) {
      source.checkpoint_dir = resume_dir_;
      source.checkpoint_files.clear();
    }
    const auto report = checkpoint::FullModelHFCheckpointer(source).load_into(*model_, settings_.runtime.seed);
    training::log_info(logger_, report.message);
    for (const auto& w : report.warnings) training::log_warning(logger_, w);
    model_->to(settings_.runtime.dtype);

    // Data, step, optimizer and loop; every parameter trains.
    run_.emplace(cfg_, registry, settings_, model_, resume_dir_, logger_, control_);
  }

  RunResult train() {
    return run_->train([this](const std::string& name, int64_t epochs_run) { save_checkpoint(name, epochs_run); });
  }

  // One complete checkpoint: HF model files, recipe_state.*, then the manifest (written last).
  void save_checkpoint(const std::string& name, int64_t epochs_run) {
    const training::RecipeState state = run_->state(epochs_run);
    run_->write_checkpoint(name, run_->manifest(kRecipeName, epochs_run), [&](const std::string& folder) {
      checkpointer_->save(folder, run_->step().state_module(), model_->args());
      training::save_recipe_state(folder, state, run_->step().optimizer());
    });
  }

  RunResult cleanup(RunResult result) { return training::end_run(result, run_ ? &*run_ : nullptr, logger_); }

 private:
  const config::Config& cfg_;
  training::MetricLogger& logger_;
  training::RunControl& control_;
  training::RunSettings settings_;
  std::shared_ptr<checkpoint::FullModelHFCheckpointer> checkpointer_;
  std::string resume_dir_;  // the checkpoint being resumed; empty for a fresh run
  models::TransformerDecoder model_{nullptr};
  std::optional<training::TrainingRun> run_;
};

}  // namespace

RunResult run_full_finetune_single_device(const config::Config& cfg, training::MetricLogger& logger,
                                          training::RunControl& control) {
  FullFinetuneRecipeSingleDevice recipe(cfg, logger, control);
  return training::run_recipe(recipe);
}

}  // namespace tb
