// The metric loggers a run reports to: metrics.jsonl on disk (what the GUI and scripts read), a
// progress line on stdout, in-process callbacks (the GUI), and a fan-out to several of them.
#pragma once

#include <fstream>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "training/metrics.h"

namespace tb::config {
struct Config;
class Registry;
}  // namespace tb::config

namespace tb::training {

// Appends one JSON object per line to <log_dir>/<filename>, flushed after every line so a reader
// (the GUI, `tail -f`) sees each step as soon as it is logged.
class DiskLogger : public MetricLogger {
 public:
  // Creates log_dir if needed; throws std::runtime_error when the file cannot be opened.
  explicit DiskLogger(const std::string& log_dir, const std::string& filename = "metrics.jsonl");
  const std::string& path() const { return path_; }
  void log_step(const StepMetrics& m) override;
  void log_event(const nlohmann::json& event) override;
  void flush() override;

 private:
  void write_line(const nlohmann::json& j);
  std::string path_;
  std::ofstream out_;
  std::mutex mutex_;
};

// Time left, from steady-state steps only: warm-up steps (compile tuning) and steps before a resume
// would skew the mean step time. Unknown (nullopt) until a steady step has been seen.
class EtaEstimator {
 public:
  void observe(const StepMetrics& m);
  std::optional<double> eta_seconds() const;
  double mean_steady_step_s() const { return steady_steps_ ? steady_time_s_ / steady_steps_ : 0; }
  int64_t steady_steps() const { return steady_steps_; }

 private:
  int64_t last_step_ = 0;
  int64_t total_steps_ = 0;
  int64_t steady_steps_ = 0;
  double steady_time_s_ = 0;
};

// "1h02m03s", "4m05s", "12s".
std::string format_duration(double seconds);
// step 12/100 | epoch 0 | loss 2.3456 | lr 2.0e-05 | 1234 tok/s | 0.52 s/step | ETA 46s   (ETA -- until known)
std::string format_progress_line(const StepMetrics& m, const EtaEstimator& eta);

// torchtune's `log_level`, for what a run prints: DEBUG and INFO everything, WARNING warnings and how
// the run ended, ERROR only a failure (metrics.jsonl always gets everything).
enum class LogLevel { Debug, Info, Warning, Error, Critical };
// torchtune's names (Python's logging levels: DEBUG, INFO, WARNING or WARN, ERROR, CRITICAL), any case.
LogLevel parse_log_level(const std::string& name);

// A progress line per logged step, and a line per event, those below its level left out. With
// `overwrite_line` (a terminal) each step line replaces the previous one.
class StdoutLogger : public MetricLogger {
 public:
  explicit StdoutLogger(std::ostream& out, bool overwrite_line = false);
  StdoutLogger();  // std::cout, overwriting when stdout is a terminal
  void set_level(LogLevel level) { level_ = level; }
  void log_step(const StepMetrics& m) override;
  void log_event(const nlohmann::json& event) override;
  void flush() override;

 private:
  std::ostream& out_;
  bool overwrite_line_;
  LogLevel level_ = LogLevel::Info;
  bool line_open_ = false;
  EtaEstimator eta_;
};

// Hands every step and event to functions (the GUI's controller queues them to its thread).
class CallbackLogger : public MetricLogger {
 public:
  CallbackLogger(std::function<void(const StepMetrics&)> on_step, std::function<void(const nlohmann::json&)> on_event = {});
  void log_step(const StepMetrics& m) override;
  void log_event(const nlohmann::json& event) override;

 private:
  std::function<void(const StepMetrics&)> on_step_;
  std::function<void(const nlohmann::json&)> on_event_;
};

// Sends everything to each of its loggers, in the order they were added. The run's log level goes to
// each StdoutLogger among them, added before or after it is set.
class FanOutLogger : public MetricLogger {
 public:
  void add(std::shared_ptr<MetricLogger> logger);
  void set_log_level(LogLevel level);
  size_t size() const { return loggers_.size(); }
  template <class T>
  bool contains() const {
    for (const auto& l : loggers_)
      if (dynamic_cast<const T*>(l.get())) return true;
    return false;
  }
  void log_step(const StepMetrics& m) override;
  void log_event(const nlohmann::json& event) override;
  void flush() override;

 private:
  std::vector<std::shared_ptr<MetricLogger>> loggers_;
  LogLevel level_ = LogLevel::Info;
};

// The loggers a run's config asks for: its `metric_logger` component, plus a DiskLogger when that is not
// one, so <log_dir or output_dir/logs>/metrics.jsonl is always written, at the config's log_level. Callers
// may add more (the CLI adds a StdoutLogger, the GUI a CallbackLogger). Throws std::runtime_error when the
// log file cannot be opened.
std::unique_ptr<FanOutLogger> make_metric_logger(const config::Config& cfg, const config::Registry& registry);

// Where a run's metrics.jsonl goes: `metric_logger.log_dir` when the config sets one, else <output_dir>/logs.
std::string metrics_log_dir(const config::Config& cfg);

}  // namespace tb::training
