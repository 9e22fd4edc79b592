// How a distributed recipe starts: it joins the process group its environment describes (torchrun's
// variables; none: a world of one process), then runs its single-device counterpart, which reads the
// group (training/run_settings.h) for the sharded loader, the reducing step and rank 0's checkpoints.
#pragma once

#include <functional>

#include "training/metrics.h"
#include "training/run_control.h"

namespace tb::training {

// Runs `recipe` as one rank of the group; a group that cannot form is a Failed run with its reason
// (and the run's "end" event), not an exception.
RunResult run_data_parallel(const std::function<RunResult()>& recipe, MetricLogger& logger);

}  // namespace tb::training
