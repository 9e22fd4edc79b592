#include "RunTypes.h"

namespace tb::ui {

QString stateName(RunState state) {
  switch (state) {
    case RunState::Idle: return "idle";
    case RunState::Running: return "running";
    case RunState::Paused: return "paused";
    case RunState::Stopping: return "stopping";
    case RunState::Completed: return "completed";
    case RunState::Stopped: return "stopped";
    case RunState::Failed: return "failed";
  }
  return {};
}

RunEvent runEventFromJson(const nlohmann::json& j) {
  RunEvent e;
  auto text = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString();
  };
  e.kind = text("event");
  if (j.contains("seconds") && j["seconds"].is_number()) e.seconds = j["seconds"].get<double>();
  e.path = text("path");
  e.status = text("status");
  e.message = text("message");
  e.json = QString::fromStdString(j.dump());
  return e;
}

void registerRunTypes() {
  static const bool once = [] {
    qRegisterMetaType<tb::training::StepMetrics>();
    qRegisterMetaType<RunEvent>();
    qRegisterMetaType<RunOutcome>();
    qRegisterMetaType<RunState>();
    return true;
  }();
  (void)once;
}

}  // namespace tb::ui
