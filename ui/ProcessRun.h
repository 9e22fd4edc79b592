// A run of several processes started from the window: `tunebench-cli run --nproc-per-node N` (the CLI's
// launcher, distributed/launcher.h) in a QProcess, on the config as the window resolved it. Rank 0 writes
// metrics.jsonl as every run does; the window follows that file, so its plots and tiles show rank 0's
// progress as they show an in-process run's. Stop is Ctrl-C to the launcher: every worker stops after
// the step they agree on, and rank 0 saves.
#pragma once

#include <QFile>
#include <QObject>
#include <QProcess>
#include <QTemporaryFile>
#include <QTimer>

#include <memory>

#include "RunTypes.h"
#include "config/config.h"
#include "training/run_log.h"

namespace tb::ui {

class ProcessRun : public QObject {
  Q_OBJECT
 public:
  explicit ProcessRun(QObject* parent = nullptr);
  ~ProcessRun() override;  // stops a run still going and waits for it

  // Starts `recipe` (a *_distributed recipe) on `processes` workers; false with the reason when the
  // launcher cannot be started.
  bool start(const tb::config::Config& config, const QString& recipe, int processes, QString* error);
  void stop();

  // The launcher the window runs: $TUNEBENCH_CLI, else tunebench-cli next to this program (or in ../bin).
  static QString cliProgram();

 Q_SIGNALS:
  void stepLogged(const tb::training::StepMetrics& metrics);
  void eventLogged(const tb::ui::RunEvent& event);
  void finished(const tb::ui::RunOutcome& outcome);

 private:
  void readLog();
  void onProcessFinished(int exitCode, QProcess::ExitStatus status);

  QProcess process_;
  QTemporaryFile config_;  // the resolved config the workers read
  QTimer poll_;
  QString logPath_;
  std::unique_ptr<tb::training::LogTail> tail_;  // the lines rank 0 has written since the start
  RunOutcome outcome_;
  bool ended_ = false;     // the log's "end" event arrived
};

}  // namespace tb::ui
