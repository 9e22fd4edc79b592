#include "training/run_control.h"

namespace tb::training {

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Completed:
      return "completed";
    case RunStatus::Stopped:
      return "stopped";
    case RunStatus::Failed:
      return "failed";
  }
  return "failed";
}

}  // namespace tb::training
