#include "training/profiler_schedule.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <torch/csrc/autograd/profiler_legacy.h>

namespace tb::training {

ProfilerSchedule::ProfilerSchedule(const ProfilerOptions& o)
    : cycle_(o.wait_steps + o.warmup_steps + o.active_steps), active_(o.active_steps), cycles_(o.num_cycles) {
  if (o.wait_steps < 0 || o.warmup_steps < 0 || o.num_cycles < 0 || o.active_steps < 1)
    throw std::runtime_error(
        "profiler: active_steps must be at least 1, and wait_steps, warmup_steps and "
        "num_cycles at least 0");
}

bool ProfilerSchedule::traces(int64_t step) const {
  if (step < 0 || (cycles_ > 0 && step >= cycles_ * cycle_)) return false;
  return step % cycle_ >= cycle_ - active_;
}

StepProfiler::StepProfiler(const ProfilerOptions& options, MetricLogger& logger)
    : options_(options), schedule_(options), logger_(logger) {
  start_if_scheduled();
}

StepProfiler::~StepProfiler() {
  try {
    if (recording_) write_trace();
  } catch (const std::exception&) {  // a destructor must not throw; the run's own outcome matters more
  }
}

void StepProfiler::step_done() {
  if (!options_.enabled) return;
  const bool ends = schedule_.ends_trace(steps_done_);
  ++steps_done_;
  if (recording_ && ends) write_trace();
  start_if_scheduled();
}

void StepProfiler::start_if_scheduled() {
  if (!options_.enabled || !schedule_.starts_trace(steps_done_)) return;
  trace_.str({});
  first_traced_ = steps_done_ + 1;
  recording_ = std::make_unique<torch::autograd::profiler::RecordProfile>(trace_);
}

void StepProfiler::write_trace() {
  recording_.reset();  // RecordProfile writes its Chrome trace into trace_ as it ends
  const auto dir = std::filesystem::path(options_.output_dir) / ("iteration_" + std::to_string(steps_done_));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (dir / "trace.json").string();
  std::ofstream out(path, std::ios::binary);
  out << trace_.str();
  if (ec || !out) throw std::runtime_error("profiler: cannot write " + path);
  trace_.str({});
  logger_.log_event({{"event", "info"},
                     {"message", "profiler: steps " + std::to_string(first_traced_) + "-" +
                                     std::to_string(steps_done_) + " of this run traced in " + path}});
}

}  // namespace tb::training
