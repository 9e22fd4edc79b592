// What the window tests share: the embedded default made short, and a run driven to its end.
// Included by tests/ui only (it needs tuneui).
#pragma once

#include <QCoreApplication>
#include <QString>

#include <yaml-cpp/yaml.h>

#include "ConfigDocument.h"
#include "MainWindow.h"
#include "TrainingController.h"

namespace tbtest {

constexpr int kRunTimeoutMs = 180000;

// The setup, short: `steps` steps, one thread, runs under `outputDir`.
inline void shorten(tb::ui::ConfigDocument& doc, const QString& outputDir, int steps) {
  using tb::ui::ConfigEdit;
  doc.apply({ConfigEdit::set("output_dir", YAML::Node(outputDir.toStdString())), ConfigEdit::scalar("epochs", "1"),
             ConfigEdit::scalar("max_steps_per_epoch", QString::number(steps)), ConfigEdit::scalar("log_every_n_steps", "1"),
             ConfigEdit::scalar("num_threads", "1"), ConfigEdit::scalar("batch_size", "4")});
}

// Start, then wait for the run to end; false with the reason.
inline bool runToTheEnd(tb::ui::MainWindow& w, QString* error) {
  if (!w.startRun(error)) return false;
  if (!w.controller()->waitUntilFinished(kRunTimeoutMs)) {
    *error = "the run did not finish";
    return false;
  }
  QCoreApplication::processEvents();
  return true;
}

}  // namespace tbtest
