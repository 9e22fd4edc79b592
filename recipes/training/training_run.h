// What a single-device recipe trains with once its model holds its weights: the tokenizer and the
// data loader, the step (eager or compiled, training/train_step.h) with its optimizer, and the loop
// (training/train_loop.h) with its learning-rate schedule, resumed where a checkpoint left off.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "config/registry.h"
#include "data/dataloader.h"
#include "data/tokenizer.h"
#include "models/transformer.h"
#include "training/run_checkpoint.h"
#include "training/run_settings.h"
#include "training/train_loop.h"
#include "training/train_step.h"

namespace tb::training {

class TrainingRun {
 public:
  // Builds the tokenizer, dataset, loader, optimizer (over the model's parameters that require grad),
  // step, schedule and loop from the config, logs the dataset and the memory budget, and, when
  // `resume_dir` is set, loads its optimizer, RNG and loop state.
  TrainingRun(const config::Config& cfg, const config::Registry& registry, const RunSettings& settings,
              models::TransformerDecoder model, const std::string& resume_dir, MetricLogger& logger,
              RunControl& control);

  // Runs the loop; freed memory stays in the process meanwhile (training/memory.h), not while building.
  RunResult train(const SaveCheckpoint& save);

  TrainStep& step() { return *step_; }
  std::string step_summary() const { return step_->summary(); }
  const TrainLoop& loop() const { return *loop_; }

  // The recipe state and the manifest of a checkpoint written now by `recipe`.
  RecipeState state(int64_t epochs_run) const { return loop_->state(epochs_run, settings_.runtime.seed); }
  nlohmann::json manifest(const std::string& recipe, int64_t epochs_run) const;
  // Writes <output_dir>/<name> (training/run_checkpoint.h): `fill` writes the files, then the manifest
  // marks it complete; the logger hears of it. In a data-parallel run only rank 0 writes.
  void write_checkpoint(const std::string& name, const nlohmann::json& manifest,
                        const std::function<void(const std::string& folder)>& fill);
  const std::string& last_checkpoint() const { return writer_.last(); }

 private:
  const config::Config& cfg_;
  RunSettings settings_;
  CheckpointWriter writer_;
  std::shared_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<data::DataLoader> loader_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<TrainLoop> loop_;
};

// What a recipe's cleanup() does: fills in the run's counters and its newest checkpoint (`run` is null
// when setup failed before building it), and logs the "end" event.
RunResult end_run(RunResult result, const TrainingRun* run, MetricLogger& logger);

}  // namespace tb::training
