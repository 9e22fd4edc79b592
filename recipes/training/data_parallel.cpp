#include "training/data_parallel.h"

#include <optional>

#include "distributed/process_group.h"
#include "training/stop_signals.h"

namespace tb::training {

RunResult run_data_parallel(const std::function<RunResult()>& recipe, MetricLogger& logger) {
  std::optional<distributed::ProcessGroupScope> group;
  try {
    const StopAtOnce waiting;  // blocked in c10d until every rank joins: a stop ends the process at once
    group.emplace(distributed::world_from_environment().value_or(distributed::World{}));
  } catch (const std::exception& e) {
    RunResult failed;
    failed.status = RunStatus::Failed;
    failed.message = e.what();
    logger.log_event({{"event", "end"}, {"status", to_string(failed.status)}, {"step", 0}, {"message", failed.message}});
    logger.flush();
    return failed;
  }
  return recipe();
}

}  // namespace tb::training
