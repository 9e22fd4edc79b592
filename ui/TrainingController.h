// Runs recipes in the background. The controller lives on the GUI thread and owns a QThread (through a
// unique_ptr whose deleter quits and joins it); the TrainingWorker lives on that thread. Requests
// (pause, stop, save on stop) cross as std::atomic flags in a RunControl; results come back as queued
// signals with registered value types.
#pragma once

#include <QObject>
#include <QString>
#include <QThread>

#include <memory>

#include "RunTypes.h"
#include "config/config.h"
#include "recipe.h"

namespace tb::ui {

class TrainingWorker;
class ProcessRun;

class TrainingController : public QObject {
  Q_OBJECT
 public:
  explicit TrainingController(QObject* parent = nullptr);
  // Asks a running recipe to stop (saving, as Stop does) and joins the thread.
  ~TrainingController() override;

  // False (with the reason) when a run is already active. `processes` > 1: the recipe's distributed
  // counterpart on that many worker processes (ui/ProcessRun.h), which cannot pause.
  bool start(const tb::config::Config& config, const QString& recipe, QString* error = nullptr, int processes = 1);
  void pause();
  void resume();
  // Finishes the current step, saves a checkpoint when asked, and ends with status `stopped`.
  void stop(bool saveCheckpoint = true);

  RunState state() const { return state_; }
  QString stateMessage() const { return stateMessage_; }
  bool isActive() const;  // running, paused or stopping
  // Whether the run has reached a pause: its step in flight has landed and it waits between steps.
  bool isHeld() const;
  // Spins the event loop until the run ends or the timeout passes; true when it ended.
  bool waitUntilFinished(int timeoutMs);
  RunOutcome lastOutcome() const { return lastOutcome_; }
  QString recipe() const { return recipe_; }
  QString outputDir() const { return outputDir_; }
  bool canPause() const { return !processRun_; }

 Q_SIGNALS:
  void started(const QString& recipe, const QString& outputDir);
  void stepLogged(const tb::training::StepMetrics& metrics);
  void eventLogged(const tb::ui::RunEvent& event);
  void stateChanged(tb::ui::RunState state, const QString& message);
  void finished(const tb::ui::RunOutcome& outcome);

 private:
  struct QuitAndWait {
    void operator()(QThread* thread) const {
      thread->quit();
      thread->wait();
      delete thread;
    }
  };
  void setState(RunState state, const QString& message);
  void onFinished(const RunOutcome& outcome);

  std::unique_ptr<TrainingWorker> worker_;  // destroyed after the thread below has been joined
  std::unique_ptr<QThread, QuitAndWait> thread_;
  std::shared_ptr<tb::training::RunControl> control_;
  std::unique_ptr<ProcessRun> processRun_;  // a run of several processes, while one is going
  RunState state_ = RunState::Idle;
  QString stateMessage_;
  RunOutcome lastOutcome_;
  QString recipe_;
  QString outputDir_;
};

}  // namespace tb::ui
