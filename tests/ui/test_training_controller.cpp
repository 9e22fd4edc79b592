// Background training with the real recipe on the embedded default: metrics arrive as queued signals,
// Stop ends with status stopped (and a complete checkpoint), Pause holds, Reload resumes at the
// checkpoint's step, and the GUI thread keeps answering while the worker trains. Every test that needs
// a run skips until full_finetune_single_device is built in: no recipe is faked here.
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "test_main.h"

#include <cmath>

#include "ConfigDocument.h"
#include "LivePlot.h"
#include "MainWindow.h"
#include "ModelInfo.h"
#include "RunHistory.h"
#include "TrainingController.h"
#include "recipe.h"

using tb::ui::RunState;
using tb::ui::TrainingController;

namespace {
constexpr const char* kRecipe = "full_finetune_single_device";
constexpr int kStepTimeoutMs = 180000;

// Fails (saying why) unless the recipe is built in and the embedded default, shortened, validates.
#define REQUIRE_RECIPE()                                                                    \
  do {                                                                                      \
    QVERIFY2(tb::find_recipe(kRecipe), "full_finetune_single_device is not built in");      \
    const QString why = embeddedDefaultProblem();                                           \
    QVERIFY2(why.isEmpty(), qPrintable("the embedded default, shortened, cannot run: " + why)); \
  } while (0)

// The embedded default, made short: `steps` optimizer steps, a checkpoint every `saveEvery`, one thread
// (the other core stays with the GUI thread), everything written under `outputDir`.
void shortRun(tb::ui::ConfigDocument& doc, const QString& outputDir, int steps, int saveEvery = 0) {
  QVERIFY(doc.loadBundled(tb::ui::kEmbeddedDefaultConfig));
  QVector<tb::ui::ConfigEdit> edits = {tb::ui::ConfigEdit::set("output_dir", YAML::Node(outputDir.toStdString())),
                                       tb::ui::ConfigEdit::scalar("epochs", "1"),
                                       tb::ui::ConfigEdit::scalar("max_steps_per_epoch", QString::number(steps)),
                                       tb::ui::ConfigEdit::scalar("log_every_n_steps", "1"),
                                       tb::ui::ConfigEdit::scalar("num_threads", "1")};
  edits << tb::ui::ConfigEdit::scalar("save_every_n_steps", saveEvery > 0 ? QString::number(saveEvery) : "null");
  doc.apply(edits);
}

QString embeddedDefaultProblem() {
  if (tb::config::find_config(tb::ui::kEmbeddedDefaultConfig).empty()) return "tiny/full_single_device is not bundled";
  tb::ui::ConfigDocument doc;
  QTemporaryDir out;
  shortRun(doc, out.path(), 2);
  const auto result = doc.validate();
  if (!result.ok()) return QString::fromStdString(result.diagnostics.front().format());
  // Validation accepts a checkpoint folder that is not there yet (real-model configs name the user's
  // download); a run needs the base model itself.
  const QString base = QString::fromStdString(result.config->get_string("checkpointer.checkpoint_dir", ""));
  if (!QFile::exists(base + "/config.json")) return "no base model in " + base + " (scripts/make_base_model.sh makes it)";
  return {};
}

// Waits for the first logged step, but gives up as soon as the run ends without one (a failed load,
// say) and reports why, instead of waiting out the whole timeout.
bool firstStepLogged(const QSignalSpy& steps, const TrainingController& controller, QString* why) {
  QElapsedTimer timer;
  timer.start();
  auto ended = [&] {
    const RunState s = controller.state();
    return s == RunState::Completed || s == RunState::Stopped || s == RunState::Failed;
  };
  while (steps.count() == 0 && !ended() && timer.elapsed() < kStepTimeoutMs) QTest::qWait(20);
  if (steps.count() > 0) return true;
  *why = "no step logged; run " + tb::ui::stateName(controller.state()) + ": " + controller.stateMessage();
  return false;
}

#define WAIT_FOR_FIRST_STEP(spy, controller)                  \
  do {                                                       \
    QString why_;                                            \
    QVERIFY2(firstStepLogged(spy, controller, &why_), qPrintable(why_)); \
  } while (0)

tb::config::Config validConfig(const tb::ui::ConfigDocument& doc) {
  const auto result = doc.validate();
  for (const auto& d : result.diagnostics) qWarning("%s", d.format().c_str());
  return result.ok() ? *result.config : tb::config::Config{};
}

// Parameters of the embedded default's base model, counted by hand from its config.json: embeddings and
// an untied output head, per layer q/k/v/o, the three MLP matrices and two norms, then the final norm.
qint64 baseModelParams() {
  QFile f("resources/base_model/config.json");
  if (!f.open(QIODevice::ReadOnly)) return -1;
  const QJsonObject c = QJsonDocument::fromJson(f.readAll()).object();
  const qint64 vocab = c["vocab_size"].toInt(), dim = c["hidden_size"].toInt(), inter = c["intermediate_size"].toInt();
  const qint64 heads = c["num_attention_heads"].toInt(), kv = c["num_key_value_heads"].toInt();
  const qint64 headDim = c.contains("head_dim") ? c["head_dim"].toInt() : dim / heads;
  const qint64 layers = c["num_hidden_layers"].toInt();
  const bool tied = c["tie_word_embeddings"].toBool();
  const qint64 perLayer = dim * heads * headDim * 2 + dim * kv * headDim * 2 + 3 * dim * inter + 2 * dim;
  return vocab * dim * (tied ? 1 : 2) + layers * perLayer + dim;
}

QList<nlohmann::json> metricLines(const QString& outputDir) {
  QList<nlohmann::json> out;
  QFile f(tb::ui::metricsFileOf(outputDir));
  if (!f.open(QIODevice::ReadOnly)) return out;
  while (!f.atEnd()) {
    const QByteArray line = f.readLine().trimmed();
    if (!line.isEmpty()) out << nlohmann::json::parse(line.toStdString());
  }
  return out;
}
}  // namespace

class TestTrainingController : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TunebenchTest");
    QCoreApplication::setApplicationName("test_training_controller");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
    // Bundled configs name their files relative to the repository root, as `scripts/setup.sh run` starts.
    QDir::setCurrent(TB_SOURCE_DIR);
  }

  void refusesARecipeThatIsNotBuiltIn() {
    TrainingController controller;
    QSignalSpy states(&controller, &TrainingController::stateChanged);
    QString error;
    QVERIFY(!controller.start(tb::config::Config{}, "no_such_recipe", &error));
    QVERIFY2(error.contains("not built into this version"), qPrintable(error));
    QCOMPARE(controller.state(), RunState::Idle);
    QCOMPARE(states.count(), 0);
  }

  void runDeliversMetrics() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::ConfigDocument doc;
    shortRun(doc, out.path(), 3);
    const auto config = validConfig(doc);
    QVERIFY(config.root.IsDefined());
    TrainingController controller;
    QSignalSpy steps(&controller, &TrainingController::stepLogged);
    QSignalSpy finished(&controller, &TrainingController::finished);
    QString error;
    QVERIFY2(controller.start(config, kRecipe, &error), qPrintable(error));
    QCOMPARE(controller.state(), RunState::Running);
    WAIT_FOR_FIRST_STEP(steps, controller);
    QVERIFY(finished.count() == 1 || finished.wait(kStepTimeoutMs));
    QCOMPARE(controller.state(), RunState::Completed);
    QCOMPARE(steps.count(), 3);
    for (int i = 0; i < steps.count(); ++i) {
      const auto m = steps.at(i).first().value<tb::training::StepMetrics>();
      QCOMPARE(m.step, int64_t(i + 1));
      QVERIFY(std::isfinite(m.loss) && m.loss > 0);
      QVERIFY(m.tokens_per_second > 0);
      QVERIFY(m.step_time_s > 0);
    }
    // The same stream reached metrics.jsonl, ending with the end event.
    const auto lines = metricLines(out.path());
    QVERIFY(!lines.isEmpty());
    QCOMPARE(QString::fromStdString(lines.last().value("event", "")), QString("end"));
    QCOMPARE(QString::fromStdString(lines.last().value("status", "")), QString("completed"));
  }

  void windowRunFeedsThePlots() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::StartupOptions options;
    options.useDefault = true;
    tb::ui::MainWindow w(options);
    shortRun(*w.document(), out.path(), 4);
    w.show();
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QSignalSpy finished(w.controller(), &TrainingController::finished);
    QVERIFY(finished.wait(kStepTimeoutMs));
    QTRY_COMPARE_WITH_TIMEOUT(w.livePlot()->pointCount(0), 4, 2000);
    QCOMPARE(w.progressBar()->value(), 4);
    QCOMPARE(w.controller()->state(), RunState::Completed);
    // The memory budget the recipe logged reaches the window: a full fp32 fine-tune with AdamW holds
    // 4 bytes of weight, 4 of gradient and 8 of moments per parameter.
    const qint64 params = baseModelParams();
    QVERIFY(params > 0);
    QCOMPARE(w.memoryFloorText(), tb::ui::formatBytes(16.0 * double(params)));
    QVERIFY(std::abs(w.livePlot()->memoryFloor(0) - 16.0 * double(params) / (1024.0 * 1024.0 * 1024.0)) < 1e-12);
  }

  // compile: true from the window: the warm-up step is shaded and annotated with the compile event's
  // seconds; a forced mismatch says in the window that the run fell back to eager.
  void compiledWindowRunShadesTheWarmup_data() {
    QTest::addColumn<bool>("forceMismatch");
    QTest::newRow("compiled") << false;
    QTest::newRow("forced fallback") << true;
  }
  void compiledWindowRunShadesTheWarmup() {
    REQUIRE_RECIPE();
    QFETCH(bool, forceMismatch);
    QTemporaryDir out, cache;
    const QByteArray cacheBefore = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
    if (forceMismatch) qputenv("TUNEBENCH_COMPILE_FORCE_MISMATCH", "1");
    tb::ui::StartupOptions options;
    options.useDefault = true;
    tb::ui::MainWindow w(options);
    shortRun(*w.document(), out.path(), 3);
    w.document()->apply({tb::ui::ConfigEdit::scalar("compile", "true")});
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QSignalSpy finished(w.controller(), &TrainingController::finished);
    QVERIFY(finished.wait(kStepTimeoutMs));
    qunsetenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
    qputenv("XDG_CACHE_HOME", cacheBefore);
    QCOMPARE(w.controller()->state(), RunState::Completed);
    QTRY_COMPARE_WITH_TIMEOUT(w.livePlot()->pointCount(0), 3, 2000);
    QCOMPARE(w.livePlot()->runLabel(0), QString("Full fine-tune, compile"));
    QCOMPARE(w.livePlot()->warmupRegionCount(0), 1);
    // The annotation carries the compile event's seconds, as metrics.jsonl has them.
    double seconds = -1;
    for (const auto& line : metricLines(w.controller()->outputDir()))
      if (line.value("event", "") == "compile") seconds = line.value("seconds", -1.0);
    QVERIFY(seconds > 0);
    const QString note = w.livePlot()->warmupAnnotation(0);
    QVERIFY2(note.contains(QString::number(seconds, 'f', seconds < 10 ? 2 : 1) + " s (1 step)"), qPrintable(note));
    QCOMPARE(w.bannerText().contains("falling back to eager"), forceMismatch);
  }

  void stopEndsWithStatusStopped() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::ConfigDocument doc;
    shortRun(doc, out.path(), 1000);
    TrainingController controller;
    QSignalSpy steps(&controller, &TrainingController::stepLogged);
    QSignalSpy finished(&controller, &TrainingController::finished);
    QVERIFY(controller.start(validConfig(doc), kRecipe));
    WAIT_FOR_FIRST_STEP(steps, controller);
    controller.stop(true);
    QCOMPARE(controller.state(), RunState::Stopping);
    QVERIFY(finished.wait(kStepTimeoutMs));
    QCOMPARE(controller.state(), RunState::Stopped);
    QCOMPARE(finished.first().first().value<tb::ui::RunOutcome>().status, tb::training::RunStatus::Stopped);
    QVERIFY2(steps.count() < 1000, "Stop did not stop the run");
    const auto lines = metricLines(out.path());
    QCOMPARE(QString::fromStdString(lines.last().value("status", "")), QString("stopped"));
    // Saved on stop, complete.
    const auto checkpoints = tb::ui::scanCheckpoints(out.path());
    QVERIFY(!checkpoints.isEmpty());
    QVERIFY(checkpoints.last().complete);
  }

  void pauseHoldsAndResumeContinues() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::ConfigDocument doc;
    shortRun(doc, out.path(), 1000);
    TrainingController controller;
    QSignalSpy steps(&controller, &TrainingController::stepLogged);
    QVERIFY(controller.start(validConfig(doc), kRecipe));
    WAIT_FOR_FIRST_STEP(steps, controller);
    controller.pause();
    QCOMPARE(controller.state(), RunState::Paused);
    // The step in flight lands; then the run waits between steps.
    QTRY_VERIFY_WITH_TIMEOUT(controller.isHeld(), kStepTimeoutMs);
    QCoreApplication::processEvents();  // the landed step's queued signal
    const int held = int(steps.count());
    QElapsedTimer paused;
    paused.start();
    QTest::qWait(3000);
    QCOMPARE(int(steps.count()), held);
    QVERIFY(controller.isHeld());
    const double pausedSeconds = double(paused.elapsed()) / 1000.0;
    controller.resume();
    QCOMPARE(controller.state(), RunState::Running);
    QVERIFY(steps.wait(kStepTimeoutMs));
    QVERIFY(steps.count() > held);
    // The time paused is not the step's: the first step after it is timed from the resume (a step that
    // counted the pause would take at least the pause).
    const auto after = steps.at(held).at(0).value<tb::training::StepMetrics>();
    QVERIFY2(after.step_time_s < pausedSeconds,
             qPrintable(QString("step %1 took %2 s after a %3 s pause").arg(after.step).arg(after.step_time_s).arg(pausedSeconds)));
    controller.stop(false);
    QVERIFY(controller.waitUntilFinished(kStepTimeoutMs));
    QCOMPARE(controller.state(), RunState::Stopped);
  }

  void reloadResumesAtTheCheckpointStep() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::StartupOptions options;
    options.useDefault = true;
    tb::ui::MainWindow w(options);
    shortRun(*w.document(), out.path(), 4, 2);
    QSignalSpy finished(w.controller(), &TrainingController::finished);
    QSignalSpy steps(w.controller(), &TrainingController::stepLogged);
    QVERIFY(w.startRun());
    QVERIFY(finished.wait(kStepTimeoutMs));
    QCOMPARE(steps.count(), 4);
    const double lossAtStep3 = steps.at(2).first().value<tb::training::StepMetrics>().loss;
    const QString runFolder = w.controller()->outputDir();  // a folder of its own under output_dir
    QCOMPARE(QFileInfo(runFolder).dir().absolutePath(), QDir(out.path()).absolutePath());
    const auto checkpoints = tb::ui::scanCheckpoints(runFolder);
    const auto it = std::find_if(checkpoints.begin(), checkpoints.end(),
                                 [](const auto& c) { return c.complete && c.step == 2; });
    QVERIFY2(it != checkpoints.end(), "no complete step_2 checkpoint");
    steps.clear();
    finished.clear();
    QString error;
    QVERIFY2(w.reloadCheckpoint(*it, &error), qPrintable(error));
    QVERIFY(finished.wait(kStepTimeoutMs));
    QCOMPARE(w.controller()->state(), RunState::Completed);
    QCOMPARE(w.controller()->outputDir(), runFolder);  // the resume writes where the run was
    QVERIFY(steps.count() >= 1);
    const auto first = steps.first().first().value<tb::training::StepMetrics>();
    QCOMPARE(first.step, int64_t(3));  // resumed at the checkpoint's step + 1
    QVERIFY(first.resumed_before);
    // A resume continues exactly: step 3 of the resumed run is step 3 of the first run.
    QVERIFY2(std::abs(first.loss - lossAtStep3) <= 1e-5 * std::abs(lossAtStep3),
             qPrintable(QString("resumed %1 vs %2").arg(first.loss).arg(lossAtStep3)));
    // The live plot shows the history up to the checkpoint, then the resumed steps.
    QTRY_COMPARE_WITH_TIMEOUT(w.livePlot()->pointCount(0), 4, 2000);
  }

  // Measured with the whole window up (tiles, live plots replotting), not the bare controller: the
  // GUI thread's own work during a run counts too.
  void guiThreadKeepsAnsweringDuringARun() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    tb::ui::StartupOptions options;
    options.useDefault = true;
    tb::ui::MainWindow w(options);
    shortRun(*w.document(), out.path(), 12);
    w.show();
    QSignalSpy finished(w.controller(), &TrainingController::finished);
    // A 10 ms ping on the GUI thread; latency = how late each tick comes.
    QElapsedTimer clock;
    qint64 last = 0, worst = 0, ticks = 0;
    QTimer ping;
    ping.setInterval(10);
    ping.setTimerType(Qt::PreciseTimer);
    connect(&ping, &QTimer::timeout, this, [&] {
      const qint64 now = clock.elapsed();
      worst = std::max(worst, now - last - 10);
      last = now;
      ++ticks;
    });
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    clock.start();
    ping.start();
    QVERIFY(finished.wait(kStepTimeoutMs));
    ping.stop();
    const double seconds = clock.elapsed() / 1000.0;
    qInfo("GUI event loop during a %.1f s run in the window: %lld ticks of 10 ms, worst latency %lld ms", seconds,
          ticks, worst);
    QCOMPARE(w.controller()->state(), RunState::Completed);
    QTRY_COMPARE_WITH_TIMEOUT(w.livePlot()->pointCount(0), 12, 2000);
    // Training on the GUI thread would starve the timer for whole steps.
    QVERIFY2(worst < 500, qPrintable(QString("worst latency %1 ms").arg(worst)));
    QVERIFY(ticks > seconds * 100 * 0.5);
  }

  void failureIsReportedWithItsMessage() {
    REQUIRE_RECIPE();
    QTemporaryDir out;
    // A log folder under a regular file cannot be created: the run fails before its first step.
    QFile blocker(out.filePath("file"));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    tb::ui::ConfigDocument doc;
    shortRun(doc, out.filePath("file/run"), 2);
    const auto config = validConfig(doc);
    if (!config.root.IsDefined()) QSKIP("the config system refuses this output_dir before the run");
    TrainingController controller;
    QSignalSpy finished(&controller, &TrainingController::finished);
    QVERIFY(controller.start(config, kRecipe));
    QVERIFY(finished.wait(kStepTimeoutMs));
    QCOMPARE(controller.state(), RunState::Failed);
    QVERIFY(!controller.stateMessage().isEmpty());
  }
};

TB_TEST(TestTrainingController)
#include "test_training_controller.moc"
