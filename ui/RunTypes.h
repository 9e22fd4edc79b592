// The value types that cross from the training thread to the GUI thread in queued signals, registered
// with Qt's meta-type system. Torch-free.
#pragma once

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <optional>

#include "recipe.h"
#include "training/metrics.h"

namespace tb::ui {

// The state a run is in, as the window shows it.
enum class RunState { Idle, Running, Paused, Stopping, Completed, Stopped, Failed };
QString stateName(RunState state);  // "running", ... (not toString: QtTest finds that by ADL)

// What a run's weights, gradients and optimizer states take before any activation: the recipe logs it
// (an info event with a `memory` object) once the optimizer exists.
struct MemoryBudget {
  int64_t frozenBytes = 0;
  int64_t trainableBytes = 0;
  int64_t gradientBytes = 0;
  int64_t optimizerBytes = 0;
  int64_t nf4Params = 0;
  int64_t floorBytes() const { return frozenBytes + trainableBytes + gradientBytes + optimizerBytes; }
  double floorGib() const { return double(floorBytes()) / (1024.0 * 1024.0 * 1024.0); }
  QString describe() const;  // "frozen 12.3 MiB (NF4), trainable …, gradients …, optimizer …"
};

// An `event` line of the metric stream: compile / checkpoint / end, with the raw JSON for the rest.
struct RunEvent {
  QString kind;       // compile, checkpoint, end, or anything else a recipe reports
  double seconds = -1;  // compile
  QString path;       // checkpoint
  QString status;     // end: completed, stopped, failed
  QString message;    // end (failed) or any event's message
  QString json;       // the whole event, compact JSON
  bool fallback = false;                // compile: the fused step disagreed, the run went on eager
  QString setup;                        // start: the setup key runs of one setup share
  bool compile = false;                 // start
  std::optional<MemoryBudget> memory;  // info: the memory budget, when the event carries one
};
RunEvent runEventFromJson(const nlohmann::json& j);

// How a run ended.
struct RunOutcome {
  tb::training::RunStatus status = tb::training::RunStatus::Completed;
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
