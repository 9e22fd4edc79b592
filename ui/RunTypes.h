// The value types that cross from the training thread to the GUI thread in queued signals, registered
// with Qt's meta-type system. Torch-free.
#pragma once

#include <QMetaType>
#include <QString>

#include <cstdint>

#include "recipe.h"
#include "training/metrics.h"

namespace tb::ui {

// The state a run is in, as the window shows it.
enum class RunState { Idle, Running, Paused, Stopping, Completed, Stopped, Failed };
QString stateName(RunState state);  // "running", ... (not toString: QtTest finds that by ADL)

// An `event` line of the metric stream: compile / checkpoint / end, with the raw JSON for the rest.
struct RunEvent {
  QString kind;       // compile, checkpoint, end, or anything else a recipe reports
  double seconds = -1;  // compile
  QString path;       // checkpoint
  QString status;     // end: completed, stopped, failed
  QString message;    // end (failed) or any event's message
  QString json;       // the whole event, compact JSON
};
RunEvent runEventFromJson(const nlohmann::json& j);

// How a run ended.
struct RunOutcome {
  tb::RunStatus status = tb::RunStatus::Completed;
  QString message;
  int64_t stepsDone = 0;
  double lastLoss = 0;
  QString lastCheckpoint;
};

// Registers the types above and StepMetrics for queued connections (idempotent).
void registerRunTypes();

}  // namespace tb::ui

Q_DECLARE_METATYPE(tb::training::StepMetrics)
Q_DECLARE_METATYPE(tb::ui::RunEvent)
Q_DECLARE_METATYPE(tb::ui::RunOutcome)
Q_DECLARE_METATYPE(tb::ui::RunState)
