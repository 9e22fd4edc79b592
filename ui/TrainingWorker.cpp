#include "TrainingWorker.h"

#include "components/builtin.h"
#include "config/schema.h"
#include "training/metric_loggers.h"
#include "training/output_lock.h"

namespace tb::ui {

void TrainingWorker::run(const tb::config::Config& config, const QString& recipeName,
                         const std::shared_ptr<tb::training::RunControl>& control) {
  RunOutcome outcome;
  const tb::RecipeInfo* recipe = tb::find_recipe(recipeName.toStdString());
  if (!recipe) {
    outcome.status = tb::training::RunStatus::Failed;
    outcome.message = "the recipe '" + recipeName + "' is not built into this version";
    Q_EMIT finished(outcome);
    return;
  }
  std::unique_ptr<tb::training::OutputDirLock> lock;  // before the log opens: one run per output_dir
  std::unique_ptr<tb::training::FanOutLogger> logger;
  try {
    lock = std::make_unique<tb::training::OutputDirLock>(tb::config::setting_string(config, "output_dir"));
    logger = tb::training::make_metric_logger(config, tb::components::builtin());
  } catch (const std::exception& e) {
    outcome.status = tb::training::RunStatus::Failed;
    outcome.message = QString::fromStdString(e.what());
    Q_EMIT finished(outcome);
    return;
  }
  // Emitted from this thread; the controller lives on the GUI thread, so delivery is queued.
  logger->add(std::make_shared<tb::training::CallbackLogger>(
      [this](const tb::training::StepMetrics& m) { Q_EMIT stepLogged(m); },
      [this](const nlohmann::json& j) { Q_EMIT eventLogged(runEventFromJson(j)); }));

  tb::training::RunResult result;
  try {
    result = recipe->run(config, *logger, *control);
  } catch (const std::exception& e) {
    // Recipes report their own end event; one that throws gets it here, as in the CLI.
    result.status = tb::training::RunStatus::Failed;
    result.message = e.what();
    logger->log_event({{"event", "end"}, {"status", "failed"}, {"message", result.message}});
  }
  logger->flush();
  outcome.status = result.status;
  outcome.message = QString::fromStdString(result.message);
  outcome.stepsDone = result.steps_done;
  outcome.lastLoss = result.last_loss;
  outcome.lastCheckpoint = QString::fromStdString(result.last_checkpoint);
  Q_EMIT finished(outcome);
}

}  // namespace tb::ui
