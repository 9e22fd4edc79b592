// What the window tests share: the embedded default made short, and a run driven to its end.
// Included by tests/ui only (it needs tuneui).
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QSettings>
#include <QString>
#include <QStringList>

#include <memory>

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

// The window tests' settings go to `folder` (as an INI file), under the test's own application name, and
// relative paths resolve from the source tree (the bundled configs name their files from there).
inline void isolateSettings(const QString& testName, const QString& folder) {
  QCoreApplication::setOrganizationName("TunebenchTest");
  QCoreApplication::setApplicationName(testName);
  QSettings::setDefaultFormat(QSettings::IniFormat);
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, folder);
  qputenv("HF_HUB_CACHE", (folder + "/hf_hub_cache").toUtf8());  // this machine's downloads stay out of the combos
  QDir::setCurrent(TB_SOURCE_DIR);
}

// A window on the embedded default (not the remembered setup) that never asks about memory.
inline std::unique_ptr<tb::ui::MainWindow> defaultWindow(const QStringList& overrides = {}) {
  tb::ui::StartupOptions options;
  options.useDefault = true;
  options.overrides = overrides;
  auto w = std::make_unique<tb::ui::MainWindow>(options);
  w->setMemoryConfirmation([](const QString&) { return true; });
  return w;
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
