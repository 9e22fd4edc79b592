// Plain value types a run reports, and the sinks that receive them. No LibTorch here: the UI and
// the CLI include this header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::training {

enum class Phase { Warmup, Steady };

// One optimizer step, as written to metrics.jsonl (docs/contracts.md "Files a run writes").
struct StepMetrics {
  int64_t step = 0;          // global optimizer step, 1-based
  int64_t total_steps = 0;   // planned steps of the whole run (0 when unknown)
  int64_t epoch = 0;         // 0-based, as torchtune
  double loss = 0;
  double lr = 0;
  double tokens_per_second = 0;  // unmasked tokens of this step / step_time_s
  double step_time_s = 0;
  double peak_memory_gib = 0;
  int64_t tokens = 0;        // unmasked tokens of this step
  Phase phase = Phase::Steady;
  bool resumed_before = false;  // true for the first step after a resume (for ETA bookkeeping)
};

nlohmann::json to_json(const StepMetrics& m);
StepMetrics step_metrics_from_json(const nlohmann::json& j);  // inverse of to_json

// Receives every step and event of a run. Events are JSON objects with an "event" key:
// {"event":"compile","seconds":…}, {"event":"checkpoint","path":…}, {"event":"end","status":…}.
class MetricLogger {
 public:
  virtual ~MetricLogger() = default;
  virtual void log_step(const StepMetrics& m) = 0;
  virtual void log_event(const nlohmann::json& event) = 0;
  virtual void flush() {}
};

}  // namespace tb::training
