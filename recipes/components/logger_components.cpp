// The metric loggers, and torchtune's profiler block.
#include "components/builtin.h"
#include "config/registry.h"
#include "training/metric_loggers.h"
#include "training/profiler_schedule.h"
#include "training/tensorboard_logger.h"

namespace tb::components {

using config::arg;
using config::ArgType;
using config::ComponentSpec;
using training::DiskLogger;
using training::StdoutLogger;
using training::TensorBoardLogger;
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

  registry.add<MetricLoggerPtr>(
      ComponentSpec{
          "metric_logger",
          "torchtune.training.metric_logging.TensorBoardLogger",
          {"TensorBoardLogger", "torchtune.utils.metric_logging.TensorBoardLogger"},
          {
              arg("log_dir", ArgType::Path, "folder of the event files; default <output_dir>/logs").or_null(),
              arg("organize_logs", ArgType::Bool, "a run_0_<time> folder per run in log_dir").or_default("true"),
          },
          "TensorBoard event files (tensorboard --logdir); metrics.jsonl is written to log_dir as well",
          false},
      [](const config::Args& a) -> MetricLoggerPtr {
        if (!a.has("log_dir")) throw std::runtime_error("TensorBoardLogger needs a log_dir");
        return std::make_unique<TensorBoardLogger>(a.get_string("log_dir"), a.get_bool("organize_logs"));
      });

  // Loggers that report to a service: refused when the config is validated, before anything runs.
  const std::string offline = "needs a network service; use DiskLogger or TensorBoardLogger";
  for (const char* name : {"WandBLogger", "CometLogger", "MLFlowLogger"})
    registry.add<MetricLoggerPtr>(
        config::unsupported_component("metric_logger", std::string("torchtune.training.metric_logging.") + name,
                                      {name, std::string("torchtune.utils.metric_logging.") + name}, offline),
        [name, offline](const config::Args&) -> MetricLoggerPtr {
          throw std::runtime_error(std::string(name) + " " + offline);
        });

  // torchtune's profiler block: a Chrome trace of the steps its schedule names (training/profiler_schedule.h).
  // Only the CPU is profiled here, with LibTorch's legacy profiler; its trace options are accepted for
  // torchtune's configs and change nothing.
  std::vector<config::ArgSpec> profiler_args = {
      arg("enabled", ArgType::Bool, "trace the scheduled steps").or_default("false"),
      arg("output_dir", ArgType::Path, "where iteration_<N>/trace.json go; default <output_dir>/profiling_outputs")
          .or_null()};
  for (const char* flag : {"cpu", "cuda", "xpu", "record_shapes"})
    profiler_args.push_back(arg(flag, ArgType::Bool, "accepted, no effect (the CPU is traced)").or_default("true"));
  for (const char* flag : {"hpu", "profile_memory", "with_stack", "with_flops"})
    profiler_args.push_back(arg(flag, ArgType::Bool, "accepted, no effect").or_default("false"));
  for (const char* count : {"wait_steps", "warmup_steps", "active_steps", "num_cycles"})
    profiler_args.push_back(arg(count, ArgType::Int, "torch.profiler.schedule; null: torchtune's default").or_null());
  registry.add<training::ProfilerOptions>(
      ComponentSpec{"profiler",
                    "torchtune.training.setup_torch_profiler",
                    {"setup_torch_profiler", "torchtune.utils.setup_torch_profiler"},
                    profiler_args,
                    "a Chrome trace of the optimizer steps torch.profiler.schedule names",
                    false},
      [](const config::Args& a) {
        training::ProfilerOptions o;
        o.enabled = a.get_bool("enabled");
        if (a.has("output_dir")) o.output_dir = a.get_string("output_dir");
        if (a.has("wait_steps")) o.wait_steps = a.get_int("wait_steps");
        if (a.has("warmup_steps")) o.warmup_steps = a.get_int("warmup_steps");
        if (a.has("active_steps")) o.active_steps = a.get_int("active_steps");
        if (a.has("num_cycles")) o.num_cycles = a.get_int("num_cycles");
        training::ProfilerSchedule check(o);  // throws a one-line reason for a schedule torch would refuse
        return o;
      });
}

}  // namespace tb::components
