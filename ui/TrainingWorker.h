// Lives on the training thread: runs one tunecore recipe per run() call and reports through queued
// signals carrying plain values. It never touches a widget.
#pragma once

#include <QObject>
#include <QString>

#include <memory>

#include "RunTypes.h"
#include "config/config.h"
#include "recipe.h"

namespace tb::ui {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  // Blocks the worker thread until the recipe returns. The metric stream goes to the config's loggers
  // (metrics.jsonl is always written) and, through the signals, to the GUI.
  void run(const tb::config::Config& config, const QString& recipe, const std::shared_ptr<tb::training::RunControl>& control);

 Q_SIGNALS:
  void stepLogged(const tb::training::StepMetrics& metrics);
  void eventLogged(const tb::ui::RunEvent& event);
  void finished(const tb::ui::RunOutcome& outcome);
};

}  // namespace tb::ui
