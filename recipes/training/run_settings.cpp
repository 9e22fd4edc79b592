#include "training/run_settings.h"

#include "config/schema.h"
#include "training/memory.h"
#include "training/recipe_state.h"

namespace tb::training {

RunSettings read_run_settings(const config::Config& cfg) {
  RunSettings s;
  s.runtime = read_runtime(cfg);
  s.output_dir = cfg.get_string("output_dir", cfg.get_string("checkpointer.output_dir", ""));
  if (s.output_dir.empty()) throw std::runtime_error("output_dir is not set");
  s.batch_size = config::setting_int(cfg, "batch_size");
  s.shuffle = config::setting_bool(cfg, "shuffle");
  s.resume_from_checkpoint = config::setting_bool(cfg, "resume_from_checkpoint");
  s.loop = read_loop_options(cfg);
  s.clip_grad_norm = config::setting_optional_float(cfg, "clip_grad_norm").value_or(0.0);
  s.activation_checkpointing = config::setting_bool(cfg, "enable_activation_checkpointing");
  s.compile = config::setting_bool(cfg, "compile");
  return s;
}

void log_info(MetricLogger& logger, const std::string& text) {
  logger.log_event({{"event", "info"}, {"message", text}});
}

void log_warning(MetricLogger& logger, const std::string& text) {
  logger.log_event({{"event", "warning"}, {"message", text}});
}

void begin_run(RunSettings& settings, const config::Config& cfg, const std::string& resume_dir, MetricLogger& logger) {
  if (!resume_dir.empty()) {
    const uint64_t recorded = read_recipe_counters(resume_dir).seed;
    if (!settings.runtime.seed_picked && settings.runtime.seed != recorded)
      logger.log_event({{"event", "warning"},
                        {"message", "seed: the config says " + std::to_string(settings.runtime.seed) + ", but " +
                                        resume_dir + " was trained with seed " + std::to_string(recorded) +
                                        "; the resumed run keeps " + std::to_string(recorded)}});
    settings.runtime.seed = recorded;
    settings.runtime.seed_picked = false;
  }
  apply_runtime(settings.runtime);
  install_memory_tracking();
  log_info(logger, seed_message(settings.runtime));
  for (const std::string& w : config::no_effect_warnings(cfg)) logger.log_event({{"event", "warning"}, {"message", w}});
}

}  // namespace tb::training
