// torchtune's `profiler:` block (training.setup_torch_profiler): which optimizer steps are traced, and a
// Chrome trace of them (LibTorch's profiler, as `bench step --profile` writes) in
// <output_dir>/iteration_<N>/trace.json, N the steps done when it was written (torchtune's folder name).
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "training/metrics.h"

namespace torch::autograd::profiler {
struct RecordProfile;
}

namespace tb::training {

// The block's settings; the schedule defaults are torchtune's DEFAULT_SCHEDULE.
struct ProfilerOptions {
  bool enabled = false;
  std::string output_dir;  // empty: the run's <output_dir>/profiling_outputs
  int64_t wait_steps = 5;
  int64_t warmup_steps = 5;
  int64_t active_steps = 2;
  int64_t num_cycles = 1;  // 0: repeat while the run lasts
};

// torch.profiler.schedule over the optimizer steps of a run, counted from 0: each cycle is wait, warm-up
// and active steps, the active ones traced. LibTorch's CPU profiler needs no warm-up, so warm-up steps
// are just not traced.
class ProfilerSchedule {
 public:
  explicit ProfilerSchedule(const ProfilerOptions& options);
  bool traces(int64_t step) const;
  bool starts_trace(int64_t step) const { return traces(step) && step % cycle_ == cycle_ - active_; }
  bool ends_trace(int64_t step) const { return traces(step) && step % cycle_ == cycle_ - 1; }

 private:
  int64_t cycle_, active_, cycles_;
};

// What the loop holds while it runs: it calls step_done() after each optimizer step (where torchtune
// calls prof.step()) and the schedule decides when tracing starts and when a trace is written. A run
// that ends while tracing writes what it traced, as torch's profiler does when its context exits.
// Profiling is per thread: make, step and destroy it on the training thread.
class StepProfiler {
 public:
  StepProfiler(const ProfilerOptions& options, MetricLogger& logger);  // disabled options: does nothing
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;
  void step_done();

 private:
  void start_if_scheduled();
  void write_trace();

  ProfilerOptions options_;
  ProfilerSchedule schedule_;
  MetricLogger& logger_;
  int64_t steps_done_ = 0;
  int64_t first_traced_ = 0;
  std::ostringstream trace_;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> recording_;
};

}  // namespace tb::training
