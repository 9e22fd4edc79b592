// full_finetune_single_device: every weight of the model trains. Reads top to bottom like
// torchtune's recipe: setup() builds everything from the config, train() is the shared loop of
// training/single_device_recipe (accumulate, normalise by tokens, clip, step, zero, schedule, log,
// save), save_checkpoint() writes one complete checkpoint folder, cleanup() reports how the run ended.
#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "recipe.h"
#include "training/recipe_support.h"
#include "training/run_checkpoint.h"
#include "training/single_device_recipe.h"

namespace tb {
namespace {

constexpr const char* kRecipeName = "full_finetune_single_device";

class FullFinetuneRecipeSingleDevice : public training::SingleDeviceRecipe {
 public:
  FullFinetuneRecipeSingleDevice(const config::Config& cfg, training::MetricLogger& logger, RunControl& control)
      : SingleDeviceRecipe(cfg, logger, control, kRecipeName) {}

  void setup() override {
    read_settings();

    // Model and weights. Resuming reads the weights of the checkpoint being resumed.
    model_ = registry_.build<models::TransformerDecoder>(cfg_.at("model"));
    checkpointer_ = registry_.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg_.at("checkpointer"));
    if (cfg_.get_bool("resume_from_checkpoint", false))
      resume_dir_ = training::find_resume_folder(checkpointer_->options().checkpoint_dir, output_dir_);
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

    setup_data();
    setup_optimizer_and_resume();  // every parameter trains
  }

 protected:
  // One complete checkpoint: HF model files, recipe_state.*, then the manifest (written last).
  void save_checkpoint(const std::string& name, int64_t epochs_run) override {
    training::RecipeState state{global_step_, epochs_run, cursor_, seed_, total_steps_};
    const auto manifest = training::checkpoint_manifest(cfg_, recipe_name_, global_step_, epochs_run, last_loss_, dtype_);
    checkpoint_written(training::write_checkpoint_folder(
        output_dir_, name,
        [&](const std::string& folder) {
          checkpointer_->save(folder, state_module(), model_->args());
          training::save_recipe_state(folder, state, *optimizer_);
        },
        manifest));
  }

 private:
  std::shared_ptr<checkpoint::FullModelHFCheckpointer> checkpointer_;
};

}  // namespace

RunResult run_full_finetune_single_device(const config::Config& cfg, training::MetricLogger& logger,
                                          RunControl& control) {
  FullFinetuneRecipeSingleDevice recipe(cfg, logger, control);
  return training::run_recipe(recipe);
}

}  // namespace tb
