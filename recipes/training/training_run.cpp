#include "training/training_run.h"

#include <cmath>

#include "data/dataset.h"
#include "distributed/process_group.h"
#include "training/memory.h"
#include "training/memory_budget.h"
#include "training/recipe_state.h"

namespace tb::training {

TrainingRun::TrainingRun(const config::Config& cfg, const config::Registry& registry, const RunSettings& settings,
                         models::TransformerDecoder model, const std::string& resume_dir, MetricLogger& logger,
                         RunControl& control)
    : cfg_(cfg), settings_(settings), writer_(settings.output_dir, logger) {
  if (const YAML::Node keep = cfg.at("checkpointer.keep_last_n_checkpoints"); keep && !keep.IsNull())
    writer_.keep_last(keep.as<int64_t>(), settings.run_id);
  // Data, after the model: the dataset may take its vocabulary.
  tokenizer_ = registry.build<std::shared_ptr<data::Tokenizer>>(cfg.at("tokenizer"));
  auto dataset = data::build_dataset(registry, cfg.at("dataset"), {tokenizer_, model->args().vocab_size, model->args().max_seq_len});
  data::DataLoaderOptions loader_options;
  loader_options.batch_size = settings.batch_size;
  loader_options.shuffle = settings.shuffle;
  loader_options.seed = settings.runtime.seed;
  loader_options.pad_id = tokenizer_->pad_id();
  if (settings.group) {
    loader_options.rank = settings.group->rank();
    loader_options.world_size = settings.group->size();
  }
  loader_ = std::make_unique<data::DataLoader>(dataset, loader_options);
  log_info(logger, dataset->description());
  for (const auto& warning : dataset->stats().warnings()) logger.log_event({{"event", "warning"}, {"message", "dataset: " + warning}});

  // The step and its optimizer.
  StepOptions step_options;
  if (cfg.has_component("loss")) step_options.loss = registry.build<models::LossSpec>(cfg.at("loss"));
  step_options.clip_grad_norm = settings.clip_grad_norm;
  step_options.activation_checkpointing = settings.activation_checkpointing;
  step_options.compile = settings.compile;
  step_options.group = settings.group;
  step_options.gradient_accumulation_steps = settings.loop.gradient_accumulation_steps;
  step_options.optimizer_in_backward = settings.optimizer_in_bwd && !settings.group;
  if (settings.optimizer_in_bwd && settings.group)
    log_warning(logger, "optimizer_in_bwd: True does nothing in a multi-process run: the optimizer steps once the "
                        "gradients are summed over the processes");
  step_ = make_train_step(model, registry.build<OptimizerFactory>(cfg.at("optimizer")), step_options, logger);
  if (step_options.optimizer_in_backward)
    log_info(logger, "optimizer_in_bwd: each parameter steps as soon as backward has made its gradient, which is "
                     "freed at once");
  const nlohmann::json budget =
      memory_budget_event(*model, step_->optimizer(), step_->trainable(), step_options.optimizer_in_backward);
  logger.log_event(budget);
  if (budget.contains("memory")) {
    const uint64_t memory = physical_memory_bytes();
    if (const auto error = memory_shortfall(budget["memory"], memory)) throw std::runtime_error(*error);
    if (const auto warning = memory_tight(budget["memory"], memory)) log_warning(logger, *warning);
  }
  // A checkpoint holds the weights and the optimizer's states (to resume): a disk that cannot hold one
  // is said now, not after the training.
  if (budget.contains("memory")) {
    const auto& m = budget["memory"];
    const uint64_t checkpoint = m.value("frozen_bytes", uint64_t{0}) + m.value("trainable_bytes", uint64_t{0}) +
                                m.value("optimizer_bytes", uint64_t{0});
    if (const auto warning = disk_space_warning(settings.output_dir, checkpoint, "a checkpoint of this run"))
      log_warning(logger, *warning);
  }

  // The loop, its schedule (over the run's steps, from the configured learning rate) and where it resumes.
  loop_ = std::make_unique<TrainLoop>(settings.loop, loader_->batches_per_epoch(), logger, control);
  loop_->set_process_group(settings.group);
  if (cfg.has_component("lr_scheduler"))
    loop_->set_schedule(registry.build<LrScheduleFactory>(cfg.at("lr_scheduler"))(loop_->total_steps()),
                        current_lr(step_->optimizer()));
  if (cfg.has_component("profiler")) {
    ProfilerOptions profiler = registry.build<ProfilerOptions>(cfg.at("profiler"));
    if (profiler.output_dir.empty())
      profiler.output_dir = settings.output_dir + "/profiling_outputs";  // as torchtune's configs
    const int64_t skipped = profiler.wait_steps + profiler.warmup_steps;
    if (profiler.enabled)
      log_info(logger, "profiler: traces steps " + std::to_string(skipped + 1) + "-" +
                           std::to_string(skipped + profiler.active_steps) + " of each cycle (" +
                           (profiler.num_cycles ? std::to_string(profiler.num_cycles) : "unlimited") + " cycles) in " +
                           profiler.output_dir);
    loop_->set_profiler(profiler);
  }
  if (!resume_dir.empty()) {
    loop_->resume_from(load_recipe_state(resume_dir, step_->optimizer()));
    log_info(logger, "resumed from " + resume_dir + " at step " + std::to_string(loop_->global_step()));
  }
}

RunResult TrainingRun::train(const SaveCheckpoint& save) {
  KeepFreedMemory kept;
  return loop_->run(*step_, *loader_, save);
}

nlohmann::json TrainingRun::manifest(const std::string& recipe, int64_t epochs_run) const {
  // The recipe the config was loaded for (a distributed recipe runs its single-device counterpart's code).
  return checkpoint_manifest(cfg_, cfg_.recipe.empty() ? recipe : cfg_.recipe, settings_.world_size(), loop_->global_step(), epochs_run, loop_->last_loss(),
                             settings_.runtime.dtype_name(), settings_.runtime.seed, settings_.run_id);
}

void TrainingRun::write_checkpoint(const std::string& name, const nlohmann::json& manifest,
                                   const std::function<void(const std::string& folder)>& fill) {
  if (!settings_.is_main()) return;  // every rank holds the same weights
  // A save's transients (each merged or converted weight, made one at a time) go back to the system
  // instead of growing the heap the steps keep (training/memory.h); the steps' heap is kept again after.
  return_freed_memory();
  struct KeepAgain {
    ~KeepAgain() { keep_freed_memory_in_process(); }
  } keep_again;
  writer_.write(name, loop_->global_step(), manifest, fill);
}

RunResult end_run(RunResult result, const TrainingRun* run, MetricLogger& logger) {
  result.steps_done = run ? run->loop().global_step() : 0;
  result.last_loss = run ? run->loop().last_loss() : std::nan("");
  result.last_checkpoint = run ? run->last_checkpoint() : std::string();
  if (run && !run->step_summary().empty()) log_info(logger, run->step_summary());
  nlohmann::json end = {{"event", "end"}, {"status", to_string(result.status)}, {"step", result.steps_done}};
  if (!result.message.empty()) end["message"] = result.message;
  logger.log_event(end);
  logger.flush();
  return result;
}

}  // namespace tb::training
