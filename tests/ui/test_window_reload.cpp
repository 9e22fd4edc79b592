// One-click reload that never crashes (the window issue, item 1): "Start new run from these weights"
// clicked on each recipe's checkpoint, the setup remembered as it changes (a crash loses nothing), and
// a run whose process is gone listed as interrupted at its last step, not "running" forever.
#include <QtTest>

#include "test_main.h"

#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QTemporaryDir>

#include <csignal>

#include "CheckpointsPanel.h"
#include "ConfigDocument.h"
#include "MainWindow.h"
#include "RunHistory.h"
#include "RunsPanel.h"
#include "TrainingController.h"
#include "config/config.h"
#include "training/run_checkpoint.h"
#include "window_test_support.h"

using tb::ui::RunState;
using tbtest::kRunTimeoutMs;

namespace {

std::unique_ptr<tb::ui::MainWindow> windowOn(const QString& config) {
  tb::ui::StartupOptions options;
  options.config = config;
  auto w = std::make_unique<tb::ui::MainWindow>(options);
  w->setMemoryConfirmation([](const QString&) { return true; });
  return w;
}

int stepLines(const QString& metrics) {
  QFile f(metrics);
  if (!f.open(QIODevice::ReadOnly)) return 0;
  return int(f.readAll().count("\"step\":"));
}

// The status the Runs tab shows for `folder`, or "" when it is not listed.
QString listedStatus(tb::ui::RunsPanel* runs, const QString& folder) {
  const QStringList listed = runs->listedRuns();
  const int row = int(listed.indexOf(QDir(folder).absolutePath()));
  return row < 0 ? QString() : runs->runsTable()->item(row, 4)->text();
}

}  // namespace

class TestWindowReload : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    tbtest::isolateSettings("test_window_reload", settingsDir_.path());
  }

  // The button clicked on the checkpoint the Checkpoints tab lists: the run starts from its weights in a
  // folder of its own (it crashed the window: the entry it read was rebuilt by the start).
  void newRunFromEachRecipesCheckpoint_data() {
    QTest::addColumn<QString>("config");
    QTest::newRow("full") << "tiny/full_single_device";
    QTest::newRow("lora") << "tiny/lora_single_device";
    QTest::newRow("qlora") << "tiny/qlora_single_device";
  }
  void newRunFromEachRecipesCheckpoint() {
    QFETCH(QString, config);
    QTemporaryDir out;
    auto w = windowOn(config);
    QCOMPARE(w->document()->bundledName(), config);
    tbtest::shorten(*w->document(), out.path(), 2);
    QString error;
    QVERIFY2(tbtest::runToTheEnd(*w, &error), qPrintable(error));
    QCOMPARE(w->controller()->state(), RunState::Completed);

    tb::ui::CheckpointsPanel* panel = w->checkpointsPanel();
    const tb::ui::CheckpointEntry* picked = panel->selected();
    QVERIFY(picked && picked->complete);
    const QString source = picked->path;
    const QString name = picked->name;
    auto* button = panel->findChild<QPushButton*>("newRunButton");
    QVERIFY(button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);
    QVERIFY2(w->controller()->isActive(), qPrintable(w->bannerText()));
    QVERIFY2(w->bannerText().contains(source), qPrintable(w->bannerText()));
    QVERIFY(w->controller()->waitUntilFinished(kRunTimeoutMs));
    QCoreApplication::processEvents();
    QVERIFY2(w->controller()->state() == RunState::Completed, qPrintable(w->controller()->stateMessage()));
    const QString run = w->controller()->outputDir();
    QVERIFY2(run.endsWith("-from-" + name), qPrintable(run));
    // The new run's checkpoint records that it started from those weights.
    const auto manifest = tb::training::read_manifest((run + "/" + name).toStdString());
    QVERIFY(manifest.has_value());
    const std::string trained = (*manifest)["config"].get<std::string>();
    QVERIFY2(trained.find(source.toStdString()) != std::string::npos, trained.c_str());
    QCOMPARE(listedStatus(w->runsPanel(), run), QString("completed"));
  }

  // Remembered on every change, not on a clean exit only: a second window opens on it while the first
  // is still open (as after a crash).
  void setupIsRememberedAsItChanges() {
    tb::ui::StartupOptions fresh;
    fresh.useDefault = true;
    auto first = std::make_unique<tb::ui::MainWindow>(fresh);
    first->document()->setScalar("epochs", "7");
    QTRY_VERIFY(QSettings().value("setup/text").toString().contains("epochs: 7"));
    auto second = std::make_unique<tb::ui::MainWindow>(tb::ui::StartupOptions{});
    QCOMPARE(second->document()->scalar("epochs"), QString("7"));
  }

  // A run whose process is killed: "running" while it holds its folder, then "interrupted at step N".
  void aRunWhoseProcessIsGoneIsInterrupted() {
    const QString cli = qEnvironmentVariable("TB_CLI");
    if (cli.isEmpty()) QSKIP("TB_CLI is not set (run under CTest)");
    QTemporaryDir out;
    const QString folder = out.filePath("killed");
    QProcess p;
    p.start(cli, {"run", "full_finetune_single_device", "--config", "tiny/full_single_device", "output_dir=" + folder,
                  "epochs=1", "max_steps_per_epoch=100000", "num_threads=1", "batch_size=4",
                  "save_every_n_steps=null"});
    QVERIFY(p.waitForStarted());
    const QString metrics = tb::ui::metricsFileOf(folder);
    QTRY_VERIFY_WITH_TIMEOUT(stepLines(metrics) >= 2, kRunTimeoutMs);

    auto w = windowOn("tiny/full_single_device");
    tb::ui::RunsPanel* runs = w->runsPanel();
    runs->setRunsRoot(out.path());
    QCOMPARE(listedStatus(runs, folder), QString("running"));

    p.kill();  // SIGKILL: no end event, no clean-up
    QVERIFY(p.waitForFinished());
    runs->refreshList();
    const auto log = tb::ui::readRunLog(folder);
    QVERIFY(!log.steps.empty());
    QCOMPARE(listedStatus(runs, folder), QString("interrupted at step %1").arg(log.steps.back().step));
  }
};

TB_TEST(TestWindowReload)
#include "test_window_reload.moc"
