// Components of recipes/training/ in the registry: metric loggers, and torchtune's profiler (accepted, no
// effect). Optimizers, LR schedules and losses are in optim_components.cpp.
#include "config/components.h"
#include "config/registry.h"
#include "training/metric_loggers.h"

namespace tb::training {

using config::ArgSpec;
using config::ArgType;
using config::ComponentSpec;
using MetricLoggerPtr = std::unique_ptr<MetricLogger>;

void register_components(config::Registry& registry) {
  registry.add<MetricLoggerPtr>(
      ComponentSpec{"metric_logger",
                    "torchtune.training.metric_logging.DiskLogger",
                    {"DiskLogger", "torchtune.utils.metric_logging.DiskLogger"},
                    {
                        ArgSpec{"log_dir", ArgType::Path, false, true, "", "folder of the log; default <output_dir>/logs"},
                        ArgSpec{"filename", ArgType::String, false, false, "metrics.jsonl", "log file name in log_dir"},
                    },
                    "one JSON object per line: every step and event",
                    false},
      [](const config::Args& a) -> MetricLoggerPtr {
        if (!a.has("log_dir")) throw std::runtime_error("DiskLogger needs a log_dir");
        return std::make_unique<DiskLogger>(a.get_string("log_dir"), a.get_string("filename"));
      });

  // log_dir is accepted so that `metric_logger=StdoutLogger` works on a config written for DiskLogger
  // (a swap keeps the arguments); metrics.jsonl still goes there.
  registry.add<MetricLoggerPtr>(
      ComponentSpec{"metric_logger",
                    "torchtune.training.metric_logging.StdoutLogger",
                    {"StdoutLogger", "torchtune.utils.metric_logging.StdoutLogger"},
                    {ArgSpec{"log_dir", ArgType::Path, false, true, "", "where metrics.jsonl is written as well"}},
                    "a progress line per logged step",
                    false},
      [](const config::Args&) -> MetricLoggerPtr { return std::make_unique<StdoutLogger>(); });

  // torchtune's configs carry a profiler block; we accept it with checked arguments, and it has no effect.
  // The product says whether it was enabled, so a recipe can warn.
  std::vector<ArgSpec> profiler_args = {
      ArgSpec{"enabled", ArgType::Bool, false, false, "false", "accepted, no effect"},
      ArgSpec{"output_dir", ArgType::Path, false, true, "", ""},
      ArgSpec{"cpu", ArgType::Bool, false, false, "true", ""},
      ArgSpec{"cuda", ArgType::Bool, false, false, "true", ""},
      ArgSpec{"xpu", ArgType::Bool, false, false, "false", ""},
      ArgSpec{"profile_memory", ArgType::Bool, false, false, "false", ""},
      ArgSpec{"with_stack", ArgType::Bool, false, false, "false", ""},
      ArgSpec{"record_shapes", ArgType::Bool, false, false, "false", ""},
      ArgSpec{"with_flops", ArgType::Bool, false, false, "false", ""},
      ArgSpec{"wait_steps", ArgType::Int, false, true, "", ""},
      ArgSpec{"warmup_steps", ArgType::Int, false, true, "", ""},
      ArgSpec{"active_steps", ArgType::Int, false, true, "", ""},
      ArgSpec{"num_cycles", ArgType::Int, false, true, "", ""},
  };
  registry.add<bool>(ComponentSpec{"profiler",
                                   "torchtune.training.setup_torch_profiler",
                                   {"setup_torch_profiler", "torchtune.utils.setup_torch_profiler"},
                                   profiler_args,
                                   "accepted, no effect",
                                   false},
                     [](const config::Args& a) { return a.get_bool("enabled"); });
}

}  // namespace tb::training
