#include "TrainingWorker.h"

#include "run_harness.h"
#include "training/metric_loggers.h"

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
  // Emitted from this thread; the controller lives on the GUI thread, so delivery is queued.
  tb::RunHarness harness;
  harness.loggers.push_back(std::make_shared<tb::training::CallbackLogger>(
      [this](const tb::training::StepMetrics& m) { Q_EMIT stepLogged(m); },
      [this](const nlohmann::json& j) { Q_EMIT eventLogged(runEventFromJson(j)); }));
  const tb::training::RunResult result = tb::run_with_harness(*recipe, config, *control, harness);
  outcome.status = result.status;
  outcome.message = QString::fromStdString(result.message);
  outcome.stepsDone = result.steps_done;
  outcome.lastLoss = result.last_loss;
  outcome.lastCheckpoint = QString::fromStdString(result.last_checkpoint);
  Q_EMIT finished(outcome);
}

}  // namespace tb::ui
