#include "training/run_settings.h"

#include <cstdio>

#include "config/schema.h"
#include "distributed/process_group.h"
#include "training/memory.h"
#include "training/recipe_state.h"
#include "training/run_checkpoint.h"

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
  s.optimizer_in_bwd = config::setting_bool(cfg, "optimizer_in_bwd");
  s.group = distributed::default_group();
  return s;
}

bool RunSettings::is_main() const { return !group || group->is_main(); }
int RunSettings::world_size() const { return group ? group->size() : 1; }

void log_info(MetricLogger& logger, const std::string& text) {
  logger.log_event({{"event", "info"}, {"message", text}});
}

void log_warning(MetricLogger& logger, const std::string& text) {
  logger.log_event({{"event", "warning"}, {"message", text}});
}

namespace {

// What makes two runs comparable: the resolved config without the keys that only say where it goes, how
// it is executed (compile) or whether it resumes. A 64-bit FNV-1a of its YAML, in hex: runs of one setup
// share it, so the window can set a compiled run beside its eager twin.
// Paths inside the output folder (checkpointer.output_dir, the loggers' folders) are dropped wherever they are.
void drop_output_paths(YAML::Node node, const std::string& output_dir) {
  if (!node.IsMap()) return;
  std::vector<std::string> drop;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node value = it->second;
    if (value.IsScalar() && (value.Scalar() == output_dir || value.Scalar().rfind(output_dir + "/", 0) == 0))
      drop.push_back(it->first.Scalar());
    else
      drop_output_paths(value, output_dir);
  }
  for (const std::string& key : drop) node.remove(key);
}

std::string setup_key(const config::Config& cfg) {
  YAML::Node root = YAML::Clone(cfg.root);
  if (!cfg.get_string("output_dir", "").empty()) drop_output_paths(root, cfg.get_string("output_dir", ""));
  for (const char* key : {"compile", "resume_from_checkpoint", "overwrite_output_dir"}) root.remove(key);
  YAML::Emitter out;
  out << root;
  uint64_t h = 1469598103934665603ull;
  for (const char* p = out.c_str(); *p; ++p) h = (h ^ uint8_t(*p)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace

void begin_run(RunSettings& settings, const config::Config& cfg, const std::string& resume_dir, MetricLogger& logger) {
  settings.run_id = resume_dir.empty() ? new_run_id() : run_id_of(resume_dir);
  logger.log_event({{"event", "start"},
                    {"run_id", settings.run_id},
                    {"recipe", cfg.recipe},
                    {"compile", settings.compile},
                    {"dtype", settings.runtime.dtype_name()},
                    {"threads", settings.runtime.num_threads},
                    {"model", cfg.get_string("model._component_", "")},
                    {"resume", !resume_dir.empty()},
                    {"setup", setup_key(cfg)},
                    {"time", utc_timestamp()}});
  if (!resume_dir.empty()) {
    check_resumable(resume_dir, cfg, settings.runtime.dtype_name(), settings.world_size(), settings.batch_size);
    const uint64_t recorded = read_recipe_counters(resume_dir).seed;
    if (!settings.runtime.seed_picked && settings.runtime.seed != recorded)
      logger.log_event({{"event", "warning"},
                        {"message", "seed: the config says " + std::to_string(settings.runtime.seed) + ", but " +
                                        resume_dir + " was trained with seed " + std::to_string(recorded) +
                                        "; the resumed run keeps " + std::to_string(recorded)}});
    settings.runtime.seed = recorded;
    settings.runtime.seed_picked = false;
  }
  if (settings.group) {  // one seed for every rank: the same initial weights and data order
    if (settings.group->is_main())
      settings.group->publish("seed", std::to_string(settings.runtime.seed));
    else
      settings.runtime.seed = std::stoull(settings.group->await("seed"));
    log_info(logger, "data parallel: rank " + std::to_string(settings.group->rank()) + " of " +
                         std::to_string(settings.group->size()) + ", " + std::to_string(settings.batch_size) +
                         " samples per rank and micro-batch (" +
                         std::to_string(settings.batch_size * settings.group->size()) + " in all)");
  }
  apply_runtime(settings.runtime);
  install_memory_tracking();
  return_freed_memory();  // for the model's build and load (training/memory.h)
  log_info(logger, seed_message(settings.runtime));
  if (const std::string w = threads_warning(settings.runtime); !w.empty()) log_warning(logger, w);
  for (const std::string& w : config::no_effect_warnings(cfg)) logger.log_event({{"event", "warning"}, {"message", w}});
}

}  // namespace tb::training
