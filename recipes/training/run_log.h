// A run's metrics.jsonl read back (docs/contracts.md "Files a run writes"): the one reader the window's Runs tab,
// its live view of a multi-process run and any other front end share. Torch-free.
//
// The file is appended to by every run into the folder. A step number that goes back starts a new
// stretch: a fresh run (step 1) replaces everything, a resume from step k (k + 1) keeps 1..k. What follows
// an `end` event is another invocation: its compile and end events replace the old ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/metrics.h"
#include "training/run_control.h"

namespace tb::training {

// One line of the log: a step, or an event (a JSON object with an "event" key).
struct LogLine {
  std::optional<StepMetrics> step;
  nlohmann::json event;  // null for a step
};
// nullopt for a line that is not a JSON object (a partial last line of a run still writing); an object
// that is neither a step nor an event gives neither. Throws std::runtime_error for a step with fields of
// the wrong type.
std::optional<LogLine> parse_log_line(const std::string& line);

// "completed" / "stopped" / anything else (failed) of an `end` event.
RunStatus run_status_from_text(const std::string& status);

struct RunLog {
  std::string path;                  // the metrics.jsonl read
  std::vector<StepMetrics> steps;    // by step, of the latest run (with what a resume kept)
  double compile_seconds = -1;       // from the last `compile` event, -1 when none
  std::string recipe;                // from the `start` event (empty in logs from before it existed)
  bool compiled = false;             // the start event's compile (else: a compile event was seen)
  std::string dtype;
  int64_t threads = 0;               // the start event's threads (0 in logs from before it existed)
  std::string setup;                 // the start event's setup key: runs of one setup share it
  std::string started;               // ISO time the run (not a resume of it) started; empty if unknown
  std::string end_status;            // completed, stopped, failed; empty while running or interrupted
  std::string end_message;
  std::vector<std::string> checkpoints;  // paths from `checkpoint` events of those steps
  std::vector<std::string> errors;       // "file:line: message" for lines that could not be read
};

// What the Runs tab and the compile tile say of a run's steps. median: the middle value (the mean of the
// middle two for an even count); 0 when there is none.
double median(std::vector<double> values);
int warmup_steps(const std::vector<StepMetrics>& steps);
double median_steady_tokens_per_second(const std::vector<StepMetrics>& steps);  // 0 when no step is steady
double median_steady_step_seconds(const std::vector<StepMetrics>& steps);
double peak_memory_gib(const std::vector<StepMetrics>& steps);                  // 0 when none was measured
// How noisy a run's speed was: the interquartile range of `values` over their median (0.1: the middle half
// of the steps lie within 10% of the median's width); 0 with fewer than 4 values.
double relative_spread(std::vector<double> values);
std::vector<double> steady_tokens_per_second(const std::vector<StepMetrics>& steps);

// Folds lines into a RunLog one at a time, as they are read or as a running run writes them.
class RunLogBuilder {
 public:
  explicit RunLogBuilder(std::string path = {}) { log_.path = std::move(path); }
  // `line_no` names the line in errors.
  void add_line(const std::string& line, int line_no);
  void add(const LogLine& line);
  // The log so far (steps in order).
  RunLog result() const;

 private:
  void another_invocation();

  RunLog log_;
  std::vector<std::pair<int64_t, StepMetrics>> steps_;
  std::vector<std::pair<int64_t, std::string>> checkpoints_;  // (step, path)
  int64_t last_step_ = 0;
  bool ended_ = false;
};

// `file`: a metrics.jsonl. A file that cannot be opened gives a log with one error.
RunLog read_run_log(const std::string& file);

// The complete lines of a growing file, read from where the last call stopped (a partial last line waits
// for its end). A file that shrank (replaced) is read again from its start.
class LogTail {
 public:
  explicit LogTail(std::string path, uint64_t offset = 0) : path_(std::move(path)), offset_(offset) {}
  std::vector<std::string> read_new_lines();

 private:
  std::string path_;
  uint64_t offset_;
  std::string partial_;
};

}  // namespace tb::training
