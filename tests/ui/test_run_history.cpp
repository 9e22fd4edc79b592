// What a run left on disk, read back: metrics.jsonl (steps, events, a resumed run's repeated steps,
// broken lines), the checkpoint folders with their manifests, and the panels that show them.
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "test_main.h"

#include "CheckpointsPanel.h"
#include "LivePlot.h"
#include "RunHistory.h"
#include "RunsPanel.h"

namespace {
void writeFile(const QString& path, const QByteArray& content) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(content);
}

QByteArray stepLine(int step, double loss, double tps, const char* phase, double stepTime = 0.5) {
  return QString("{\"step\":%1,\"total_steps\":6,\"epoch\":0,\"loss\":%2,\"lr\":1e-4,\"tokens_per_second\":%3,"
                 "\"step_time_s\":%4,\"peak_memory_gib\":0.5,\"tokens\":64,\"phase\":\"%5\"}\n")
      .arg(step)
      .arg(loss)
      .arg(tps)
      .arg(stepTime)
      .arg(phase)
      .toUtf8();
}
}  // namespace

class TestRunHistory : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TunebenchTest");
    QCoreApplication::setApplicationName("test_run_history");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
  }

  void readsMetricsStream() {
    QTemporaryDir dir;
    QByteArray log = stepLine(1, 3.0, 100, "warmup", 4.0) + "{\"event\":\"compile\",\"seconds\":3.5}\n" +
                     stepLine(2, 2.5, 300, "steady") + "{\"event\":\"checkpoint\",\"path\":\"/x/step_2\"}\n" +
                     "{not json\n" + stepLine(3, 2.0, 400, "steady") +
                     // A resume from step 2 logs step 3 again: the later line wins.
                     stepLine(3, 1.9, 500, "steady") + stepLine(4, 1.5, 200, "steady") +
                     "{\"event\":\"end\",\"status\":\"stopped\"}\n";
    writeFile(dir.filePath("logs/metrics.jsonl"), log);
    const tb::ui::RunLog r = tb::ui::readRunLog(dir.path());
    QCOMPARE(int(r.steps.size()), 4);
    QCOMPARE(r.steps[2].step, int64_t(3));
    QCOMPARE(r.steps[2].loss, 1.9);
    QCOMPARE(r.compileSeconds, 3.5);
    QCOMPARE(r.endStatus, QString("stopped"));
    QCOMPARE(r.checkpoints, QStringList{"/x/step_2"});
    QCOMPARE(r.warmupSteps(), 1);
    QCOMPARE(r.medianSteadyTokensPerSecond(), 300.0);  // median of 300, 500, 200
    QCOMPARE(r.errors.size(), 1);
    QVERIFY2(r.errors.first().endsWith("metrics.jsonl:5: not a JSON object"), qPrintable(r.errors.first()));
  }

  // Every run into a folder appends to its metrics.jsonl: a fresh run there shows alone (not on top of
  // the old run's later steps), a resume keeps the steps up to its checkpoint; an eager run after a
  // compiled one has no compile seconds.
  void laterRunsInTheSameFolderReplaceEarlierOnes() {
    QTemporaryDir dir;
    QByteArray log;
    log += "{\"event\":\"compile\",\"seconds\":2.0}\n";
    for (int s = 1; s <= 6; ++s) log += stepLine(s, 5.0 - 0.1 * s, 100, s == 1 ? "warmup" : "steady");
    log += "{\"event\":\"checkpoint\",\"path\":\"/x/step_6\",\"step\":6}\n{\"event\":\"end\",\"status\":\"completed\"}\n";
    // A fresh eager run into the same folder, killed after step 3 (no end event).
    for (int s = 1; s <= 3; ++s) log += stepLine(s, 3.0, 200, "steady");
    log += "{\"event\":\"checkpoint\",\"path\":\"/x/step_2\",\"step\":2}\n";
    writeFile(dir.filePath("logs/metrics.jsonl"), log);
    tb::ui::RunLog r = tb::ui::readRunLog(dir.path());
    QCOMPARE(int(r.steps.size()), 3);
    for (const auto& m : r.steps) QCOMPARE(m.loss, 3.0);
    QCOMPARE(r.compileSeconds, -1.0);
    QCOMPARE(r.endStatus, QString());
    QCOMPARE(r.checkpoints, QStringList{"/x/step_2"});

    // Resumed from step 2: steps 1-2 stay, the killed run's step 3 is replaced, 4-5 are new.
    log += stepLine(3, 2.0, 300, "steady") + stepLine(4, 1.9, 300, "steady") + stepLine(5, 1.8, 300, "steady");
    log += "{\"event\":\"end\",\"status\":\"stopped\"}\n";
    writeFile(dir.filePath("logs/metrics.jsonl"), log);
    r = tb::ui::readRunLog(dir.path());
    QCOMPARE(int(r.steps.size()), 5);
    QCOMPARE(r.steps[1].loss, 3.0);
    QCOMPARE(r.steps[2].loss, 2.0);
    QCOMPARE(r.steps[4].loss, 1.8);
    QCOMPARE(r.endStatus, QString("stopped"));
    QCOMPARE(r.checkpoints, QStringList{"/x/step_2"});
  }

  void scansCheckpointFolders() {
    QTemporaryDir dir;
    writeFile(dir.filePath("step_2/model-00001-of-00001.safetensors"), QByteArray(1000, 'x'));
    writeFile(dir.filePath("step_2/tunebench_checkpoint.json"),
              R"({"step":2,"epoch":0,"loss":2.25,"recipe":"full_finetune_single_device","compile":true,"dtype":"bf16"})");
    writeFile(dir.filePath("step_4/model-00001-of-00001.safetensors"), QByteArray(10, 'x'));  // no manifest
    writeFile(dir.filePath("epoch_0/tunebench_checkpoint.json"), R"({"step":6,"epoch":0,"loss":1.5})");
    writeFile(dir.filePath(".step_8.tmp/model.safetensors"), QByteArray(10, 'x'));
    writeFile(dir.filePath("logs/metrics.jsonl"), "");
    const auto entries = tb::ui::scanCheckpoints(dir.path());
    QCOMPARE(entries.size(), 3);
    QCOMPARE(entries[0].name, QString("step_2"));
    QVERIFY(entries[0].complete);
    QCOMPARE(entries[0].step, qint64(2));
    QCOMPARE(entries[0].loss, 2.25);
    QVERIFY(entries[0].compile);
    QCOMPARE(entries[0].dtype, QString("bf16"));
    QCOMPARE(entries[0].recipe, QString("full_finetune_single_device"));
    QCOMPARE(entries[0].sizeBytes, qint64(1000) + QFileInfo(dir.filePath("step_2/tunebench_checkpoint.json")).size());
    QCOMPARE(entries[1].name, QString("step_4"));
    QVERIFY(!entries[1].complete);
    QCOMPARE(entries[1].step, qint64(4));
    QCOMPARE(entries[2].name, QString("epoch_0"));
    QCOMPARE(entries[2].step, qint64(6));

    tb::ui::CheckpointsPanel panel;
    panel.setOutputDir(dir.path());
    QCOMPARE(panel.table()->rowCount(), 3);
    QVERIFY(panel.table()->item(1, 9)->text().startsWith("incomplete"));
    auto* reload = panel.findChild<QPushButton*>("reloadButton");
    QVERIFY(reload);
    QCOMPARE(reload->text(), QString("Reload (resume training)"));
    panel.select(1);
    QVERIFY(!reload->isEnabled());  // an incomplete checkpoint cannot be reloaded
    panel.select(0);
    QVERIFY(reload->isEnabled());
    QSignalSpy spy(&panel, &tb::ui::CheckpointsPanel::reloadRequested);
    reload->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.first().first().value<tb::ui::CheckpointEntry>().step, qint64(2));
    panel.setRunActive(true);
    QVERIFY(!reload->isEnabled());
  }

  void runsPanelOverlaysTwoRuns() {
    QTemporaryDir dir;
    writeFile(dir.filePath("eager/logs/metrics.jsonl"),
              stepLine(1, 3, 100, "steady") + stepLine(2, 2, 100, "steady") + stepLine(3, 1, 100, "steady"));
    writeFile(dir.filePath("compiled/logs/metrics.jsonl"),
              stepLine(1, 3, 20, "warmup", 5) + "{\"event\":\"compile\",\"seconds\":4.5}\n" +
                  stepLine(2, 2, 150, "steady") + stepLine(3, 1, 150, "steady"));
    tb::ui::RunsPanel panel;
    QString error;
    QVERIFY2(panel.showRun(dir.filePath("eager"), false, &error), qPrintable(error));
    QVERIFY2(panel.showRun(dir.filePath("compiled"), true, &error), qPrintable(error));
    QCOMPARE(panel.plot()->runCount(), 2);
    QCOMPARE(panel.plot()->pointCount(0), 3);
    QCOMPARE(panel.plot()->pointCount(1), 3);
    QCOMPARE(panel.plot()->runLabel(0), QString("eager (eager)"));
    QCOMPARE(panel.plot()->runLabel(1), QString("compiled (compile)"));
    QCOMPARE(panel.plot()->warmupRegionCount(1), 1);
    QVERIFY2(panel.comparisonText().contains("1.50x"), qPrintable(panel.comparisonText()));
    QCOMPARE(panel.recentRuns().first(), QDir(dir.filePath("compiled")).absolutePath());
    QVERIFY(!panel.showRun(dir.filePath("missing"), false, &error));
    // Recent runs survive in QSettings.
    tb::ui::RunsPanel again;
    QCOMPARE(again.recentRuns().mid(0, 2),
             QStringList({QDir(dir.filePath("compiled")).absolutePath(), QDir(dir.filePath("eager")).absolutePath()}));
  }
};

TB_TEST(TestRunHistory)
#include "test_run_history.moc"
