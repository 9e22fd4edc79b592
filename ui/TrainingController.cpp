#include "TrainingController.h"

#include <QEventLoop>
#include <QTimer>

#include "ProcessRun.h"
#include "TrainingWorker.h"

namespace tb::ui {

TrainingController::TrainingController(QObject* parent)
    : QObject(parent), worker_(std::make_unique<TrainingWorker>()), thread_(new QThread) {
  registerRunTypes();
  thread_->setObjectName("tunebench-training");
  worker_->moveToThread(thread_.get());
  connect(worker_.get(), &TrainingWorker::stepLogged, this, &TrainingController::stepLogged, Qt::QueuedConnection);
  connect(worker_.get(), &TrainingWorker::eventLogged, this, &TrainingController::eventLogged, Qt::QueuedConnection);
  connect(worker_.get(), &TrainingWorker::finished, this, &TrainingController::onFinished, Qt::QueuedConnection);
  thread_->start();
}

TrainingController::~TrainingController() {
  processRun_.reset();  // stops its workers and waits for them
  if (control_) {
    control_->pause = false;
    control_->stop = true;
  }
  thread_.reset();  // quit(); wait(): returns once the recipe has returned
  worker_.reset();
}

bool TrainingController::isActive() const {
  return state_ == RunState::Running || state_ == RunState::Paused || state_ == RunState::Stopping;
}

bool TrainingController::isHeld() const { return control_ && control_->held; }

bool TrainingController::start(const tb::config::Config& config, const QString& recipe, QString* error, int processes) {
  if (isActive()) {
    if (error) *error = "a run is already in progress";
    return false;
  }
  if (!tb::find_recipe(recipe.toStdString())) {
    if (error) *error = "the recipe '" + recipe + "' is not built into this version yet";
    return false;
  }
  outputDir_ = QString::fromStdString(config.get_string("output_dir", ""));
  lastOutcome_ = {};
  processRun_.reset();
  control_.reset();
  if (processes > 1) {  // data parallel: the recipe's distributed counterpart, started by the CLI's launcher
    const QString distributed = QString::fromStdString(tb::distributed_counterpart(recipe.toStdString()));
    auto run = std::make_unique<ProcessRun>();
    connect(run.get(), &ProcessRun::stepLogged, this, &TrainingController::stepLogged);
    connect(run.get(), &ProcessRun::eventLogged, this, &TrainingController::eventLogged);
    connect(run.get(), &ProcessRun::finished, this, &TrainingController::onFinished);
    if (!run->start(config, distributed, processes, error)) return false;
    processRun_ = std::move(run);
    recipe_ = distributed;
    setState(RunState::Running, QString("%1 processes").arg(processes));
    Q_EMIT started(recipe_, outputDir_);
    return true;
  }
  control_ = std::make_shared<tb::training::RunControl>();
  recipe_ = recipe;
  setState(RunState::Running, {});
  Q_EMIT started(recipe_, outputDir_);
  // yaml-cpp nodes share their storage between copies: the worker gets a deep copy nobody else holds.
  tb::config::Config own = config;
  own.root = YAML::Clone(config.root);
  QMetaObject::invokeMethod(worker_.get(), [worker = worker_.get(), own = std::move(own), recipe, control = control_] {
    worker->run(own, recipe, control);
  });
  return true;
}

void TrainingController::pause() {
  if (state_ != RunState::Running || !control_) return;
  control_->pause = true;
  setState(RunState::Paused, "pauses after the current step");
}

void TrainingController::resume() {
  if (state_ != RunState::Paused || !control_) return;
  control_->pause = false;
  setState(RunState::Running, {});
}

void TrainingController::stop(bool saveCheckpoint) {
  if (isActive() && processRun_) {  // the workers always save on a stop: Ctrl-C to the launcher
    processRun_->stop();
    setState(RunState::Stopping, "every process finishes the current step, then rank 0 saves a checkpoint");
    return;
  }
  if (!isActive() || !control_) return;
  control_->save_on_stop = saveCheckpoint;
  control_->stop = true;
  control_->pause = false;
  setState(RunState::Stopping, saveCheckpoint ? "finishing the current step, then saving a checkpoint"
                                              : "finishing the current step");
}

void TrainingController::onFinished(const RunOutcome& outcome) {
  lastOutcome_ = outcome;
  switch (outcome.status) {
    case tb::training::RunStatus::Completed: setState(RunState::Completed, outcome.message); break;
    case tb::training::RunStatus::Stopped: setState(RunState::Stopped, outcome.message); break;
    case tb::training::RunStatus::Failed:
      setState(RunState::Failed, outcome.message.isEmpty() ? "the recipe gave no reason" : outcome.message);
      break;
  }
  Q_EMIT finished(outcome);
}

void TrainingController::setState(RunState state, const QString& message) {
  state_ = state;
  stateMessage_ = message;
  Q_EMIT stateChanged(state, message);
}

bool TrainingController::waitUntilFinished(int timeoutMs) {
  if (!isActive()) return true;
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  connect(this, &TrainingController::finished, &loop, &QEventLoop::quit);
  timeout.start(timeoutMs);
  loop.exec();
  return !isActive();
}

}  // namespace tb::ui
