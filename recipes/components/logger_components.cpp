// The metric loggers, and torchtune's profiler block (accepted, no effect).
#include "components/builtin.h"
#include "config/registry.h"
#include "training/metric_loggers.h"

namespace tb::components {

using config::arg;
using config::ArgType;
using config::ComponentSpec;
using training::DiskLogger;
using training::StdoutLogger;
using MetricLoggerPtr = std::unique_ptr<training::MetricLogger>;

void register_metric_loggers(config::Registry& registry) {
  registry.add<MetricLoggerPtr>(
      ComponentSpec{"metric_logger",
                    "torchtune.training.metric_logging.DiskLogger",
                    {"DiskLogger", "torchtune.utils.metric_logging.DiskLogger"},
                    {
                        arg("log_dir", ArgType::Path, "folder of the log; default <output_dir>/logs").or_null(),
                        arg("filename", ArgType::String, "log file name in log_dir").or_default("metrics.jsonl"),
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
                    {arg("log_dir", ArgType::Path, "where metrics.jsonl is written as well").or_null()},
                    "a progress line per logged step",
                    false},
      [](const config::Args&) -> MetricLoggerPtr { return std::make_unique<StdoutLogger>(); });

  // torchtune's configs carry a profiler block; we accept it with checked arguments, and it has no effect.
  // The product says whether it was enabled, so a recipe can warn.
  std::vector<config::ArgSpec> profiler_args = {
      arg("enabled", ArgType::Bool, "accepted, no effect").or_default("false"),
      arg("output_dir", ArgType::Path).or_null()};
  for (const char* flag : {"cpu", "cuda"}) profiler_args.push_back(arg(flag, ArgType::Bool).or_default("true"));
  for (const char* flag : {"xpu", "profile_memory", "with_stack", "record_shapes", "with_flops"})
    profiler_args.push_back(arg(flag, ArgType::Bool).or_default("false"));
  for (const char* count : {"wait_steps", "warmup_steps", "active_steps", "num_cycles"})
    profiler_args.push_back(arg(count, ArgType::Int).or_null());
  registry.add<bool>(ComponentSpec{"profiler",
                                   "torchtune.training.setup_torch_profiler",
                                   {"setup_torch_profiler", "torchtune.utils.setup_torch_profiler"},
                                   profiler_args,
                                   "accepted, no effect",
                                   false},
                     [](const config::Args& a) { return a.get_bool("enabled"); });
}

}  // namespace tb::components
