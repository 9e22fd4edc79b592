// The settings every single-device recipe reads from its config, read once before anything is built.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "training/metrics.h"
#include "training/runtime.h"
#include "training/train_loop.h"

namespace tb::distributed {
class ProcessGroup;
}

namespace tb::training {

struct RunSettings {
  Runtime runtime;  // dtype, threads, seed
  std::string output_dir;
  int64_t batch_size = 1;
  bool shuffle = true;
  bool resume_from_checkpoint = false;
  // Which run this is: drawn by a fresh run, taken from its checkpoint by a resumed one (older
  // checkpoints have none: ""). Every checkpoint's manifest records it; keep_last_n_checkpoints removes
  // only this run's.
  std::string run_id;
  LoopOptions loop;
  double clip_grad_norm = 0;  // 0: no clipping
  bool activation_checkpointing = false;
  bool compile = false;
  bool optimizer_in_bwd = false;  // step each parameter in backward (training/optimizer_in_backward.h)
  // The data-parallel group this run is one rank of (distributed::default_group()); null: one process.
  distributed::ProcessGroup* group = nullptr;
  bool is_main() const;      // the rank that logs and writes checkpoints (rank 0, or the only process)
  int world_size() const;    // 1 without a group
};

// Throws std::runtime_error with a one-line reason for values this build cannot honour.
RunSettings read_run_settings(const config::Config& cfg);

// The start of every run, before its model is built: a resumed run takes the seed its checkpoint
// records (the run was started with it, perhaps picked for `seed: null`), the ranks of a group take rank
// 0's (so `seed: null` draws one seed for all of them); then the runtime is applied
// on this thread, tensor memory is counted, and the seed and any keys that have no effect here are
// logged, and the run's id is drawn or read (RunSettings::run_id). `resume_dir` empty: a fresh run.
void begin_run(RunSettings& settings, const config::Config& cfg, const std::string& resume_dir, MetricLogger& logger);

// {"event":"info","message":text}
void log_info(MetricLogger& logger, const std::string& text);
// {"event":"warning","message":text}: shown at log_level WARNING too
void log_warning(MetricLogger& logger, const std::string& text);

}  // namespace tb::training
