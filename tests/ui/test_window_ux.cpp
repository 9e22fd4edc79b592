// The window as a person uses it (issue: "The window as a person uses it"): each numbered finding of a
// new user's hour with it, replayed with real input events and real runs of the embedded default.
//   1 the wheel over the form     2 a malformed dataset's message   3 weights, presets, truncated files
//   4 one run per folder, Runs    5 the Checkpoints tab              6 progress and ETA between runs
//   7 switching the recipe        8 a 1024x640 window                9 the compile tile and warm-up band
//   10 Open folder, tooltips, shortcuts, About, the hardware line, the memory guard
#include <QtTest>

#include "test_main.h"

#include <QAbstractSpinBox>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QWheelEvent>

#include <yaml-cpp/yaml.h>

#include "CheckpointsPanel.h"
#include "ConfigDocument.h"
#include "LivePlot.h"
#include "MainWindow.h"
#include "MetricTile.h"
#include "RunHistory.h"
#include "RunSetupPanel.h"
#include "RunsPanel.h"
#include "TrainingController.h"
#include "config/config.h"
#include "training/run_checkpoint.h"
#include "test_support.h"
#include "window_test_support.h"

using tb::ui::ConfigEdit;
using tb::ui::RunState;

namespace {

using tbtest::kRunTimeoutMs;
using tbtest::runToTheEnd;
using tbtest::shorten;

void wheel(QWidget* target, int notches) {
  const QPointF pos(target->width() / 2.0, target->height() / 2.0);
  QWheelEvent event(pos, target->mapToGlobal(pos), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(target, &event);
}

}  // namespace

class TestWindowUx : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    tbtest::isolateSettings("test_window_ux", settingsDir_.path());
    QVERIFY2(!tb::config::find_config(tb::ui::kEmbeddedDefaultConfig).empty(), "the embedded default is not bundled");
  }

  // 1. The wheel over the form scrolls it; a combo or spin box changes only once clicked.
  void wheelOverTheFormChangesNothing() {
    auto w = tbtest::defaultWindow();
    w->resize(1024, 640);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    tb::ui::RunSetupPanel* setup = w->setupPanel();
    const QString before = w->document()->text();
    const int accumulation = setup->gradAccumBox()->value();
    wheel(setup->gradAccumBox(), -3);
    wheel(setup->datasetCombo(), -5);
    wheel(setup->recipeCombo(), -1);
    QCOMPARE(setup->gradAccumBox()->value(), accumulation);
    QCOMPARE(setup->datasetCombo()->currentIndex(), 0);
    QCOMPARE(w->document()->text(), before);
    // Clicked into, it takes the wheel as a spin box does.
    setup->gradAccumBox()->setFocus(Qt::MouseFocusReason);
    QTRY_VERIFY(setup->gradAccumBox()->hasFocus());
    wheel(setup->gradAccumBox(), 2);
    QVERIFY(setup->gradAccumBox()->value() != accumulation);
  }

  // 2. A malformed dataset gets the file:line message the CLI gives, not a guess at its columns.
  void malformedDatasetSaysFileAndLine() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n  {\"instruction\": \"c\"\n");
    f.close();
    auto w = tbtest::defaultWindow();
    QString error;
    QVERIFY(!w->setupPanel()->useDatasetFile(path, &error));
    QVERIFY2(error.contains("bad.json:") && error.contains("JSON") && !error.contains("none of"), qPrintable(error));
    QVERIFY2(QRegularExpression(R"(bad\.json:\d+)").match(error).hasMatch(), qPrintable(error));
  }

  // 3. "Start new run from these weights" is that run's only; a preset resets what does not fit it; a
  // truncated safetensors is reported when the folder is opened; the Model box says what will load.
  void weightsPresetsAndTruncatedFiles() {
    QTemporaryDir out;
    auto w = tbtest::defaultWindow();
    shorten(*w->document(), out.path(), 2);
    QString error;
    QVERIFY2(runToTheEnd(*w, &error), qPrintable(error));
    const auto checkpoints = tb::ui::scanCheckpoints(w->controller()->outputDir());
    QVERIFY(!checkpoints.isEmpty() && checkpoints.last().complete);
    const QString setupText = w->document()->text();
    QVERIFY2(w->startFromWeights(checkpoints.last(), &error), qPrintable(error));
    QVERIFY(w->controller()->waitUntilFinished(kRunTimeoutMs));
    QCOMPARE(w->controller()->state(), RunState::Completed);
    QVERIFY2(w->controller()->outputDir().endsWith("-from-" + checkpoints.last().name), qPrintable(w->controller()->outputDir()));
    QCOMPARE(w->document()->text(), setupText);  // the setup still loads the base model
    QVERIFY2(w->setupPanel()->weightsText().contains("resources/base_model"), qPrintable(w->setupPanel()->weightsText()));

    w->document()->setModelPreset("llama3_2_1b");
    QVERIFY(!w->document()->value("checkpointer.checkpoint_dir").IsScalar() ||
            w->document()->value("checkpointer.checkpoint_dir").IsNull());
    QCOMPARE(w->document()->scalar("checkpointer.model_type"), QString("LLAMA3_2"));
    QVERIFY2(w->setupPanel()->weightsText().contains("seeded random"), qPrintable(w->setupPanel()->weightsText()));
    QVERIFY2(w->document()->validate().ok(), "the preset's setup does not validate");

    // A model folder with a cut-off weights file.
    QTemporaryDir model;
    for (const QString& name : QDir("resources/base_model").entryList(QDir::Files))
      QVERIFY(QFile::copy("resources/base_model/" + name, model.filePath(name)));
    QFile weights(model.filePath("model.safetensors"));
    QVERIFY(weights.open(QIODevice::ReadWrite));
    QVERIFY(weights.resize(weights.size() / 2));
    weights.close();
    QVERIFY(!w->setupPanel()->openModelFolder(model.path(), &error));
    QVERIFY2(error.contains("model.safetensors") && error.contains("truncated"), qPrintable(error));
  }

  // 4 and 9. Eager then compiled: each Start has its own folder, Runs lists both in a stable order with
  // recipe and mode, "Compare eager vs compile" is one click, and the Live tab's compile tile appears.
  void runsHaveTheirOwnFoldersAndCompare() {
    QTemporaryDir out, cache;
    const QByteArray cacheBefore = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
    auto w = tbtest::defaultWindow();
    shorten(*w->document(), out.path(), 4);
    QString error;
    QVERIFY2(runToTheEnd(*w, &error), qPrintable(error));
    const QString eager = w->controller()->outputDir();
    QVERIFY(w->compileTileText().isEmpty());  // nothing to compare with yet
    w->setupPanel()->compileBox()->click();
    QVERIFY2(runToTheEnd(*w, &error), qPrintable(error));
    qputenv("XDG_CACHE_HOME", cacheBefore);
    const QString compiled = w->controller()->outputDir();
    QVERIFY(eager != compiled);
    QCOMPARE(QFileInfo(eager).absolutePath(), QDir(out.path()).absolutePath());
    QVERIFY2(QFileInfo(eager).fileName().startsWith("full-eager-"), qPrintable(eager));
    QVERIFY2(QFileInfo(compiled).fileName().startsWith("full-compile-"), qPrintable(compiled));
    QVERIFY(QFileInfo(tb::ui::metricsFileOf(eager)).isFile() && QFileInfo(tb::ui::metricsFileOf(compiled)).isFile());
    QVERIFY2(w->compileTileText().endsWith("x eager"), qPrintable(w->compileTileText()));
    for (tb::ui::MetricTile* tile : w->findChildren<tb::ui::MetricTile*>())  // how noisy the two runs were
      if (tile->caption() == "compile vs eager")
        QVERIFY2(QRegularExpression(R"(noise ±\d+%$)").match(tile->detail()).hasMatch(), qPrintable(tile->detail()));

    tb::ui::RunsPanel* runs = w->runsPanel();
    const QStringList order = runs->listedRuns();
    QVERIFY(order.size() >= 2);
    QCOMPARE(order.mid(0, 2), QStringList({compiled, eager}));  // newest start first
    QTableWidget* table = runs->runsTable();
    QCOMPARE(table->item(0, 1)->text(), QString("full_finetune_single_device"));
    QCOMPARE(table->item(0, 2)->text(), QString("compile"));
    QCOMPARE(table->item(1, 2)->text(), QString("eager"));
    QCOMPARE(table->item(1, 4)->text(), QString("completed"));
    QVERIFY(runs->showRun(eager, false));  // showing the older run does not move it
    QCOMPARE(runs->listedRuns(), order);
    // At 1920 px every column of the list is in view (Recipe, Status and Final loss were hidden).
    w->resize(1920, 1080);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    qobject_cast<QTabWidget*>(w->centralWidget())->setCurrentWidget(runs);
    QTRY_VERIFY2(runs->runsColumnsInView(), qPrintable(QString("list %1 px wide in a %2 px tab").arg(runs->runsTable()->viewport()->width()).arg(runs->width())));
    QTest::mouseClick(runs->findChild<QPushButton*>("compareButton"), Qt::LeftButton);
    QCOMPARE(runs->shownRuns().size(), 2);
    QVERIFY2(QRegularExpression(R"(^compile \d+\.\d\dx (faster|slower))").match(runs->comparisonText()).hasMatch(),
             qPrintable(runs->comparisonText()));
    // The same words whichever run was picked first.
    const QString said = runs->comparisonText();
    QVERIFY(runs->showRun(compiled, false) && runs->showRun(eager, true));
    QCOMPARE(runs->comparisonText(), said);

    // A named folder that holds a run already is asked about; No starts nothing.
    int asked = 0;
    w->setReuseConfirmation([&](const QString& folder) {
      ++asked;
      return folder == eager ? false : true;
    });
    w->setupPanel()->runNameEdit()->setText(QFileInfo(eager).fileName());
    QVERIFY(!w->startRun(&error));
    QCOMPARE(asked, 1);
    QCOMPARE(w->controller()->state(), RunState::Completed);
    // Yes replaces it: the folder then holds this run alone, one log and its own checkpoints.
    const std::string before = tb::training::run_id_of((eager + "/epoch_0").toStdString());
    w->setReuseConfirmation([](const QString&) { return true; });
    w->setupPanel()->runNameEdit()->setText(QFileInfo(eager).fileName());
    QVERIFY2(tbtest::runToTheEnd(*w, &error), qPrintable(error));
    QCOMPARE(w->controller()->outputDir(), eager);
    QCOMPARE(w->controller()->state(), RunState::Completed);
    const std::string after = tb::training::run_id_of((eager + "/epoch_0").toStdString());
    QVERIFY(!after.empty() && after != before);
    for (const auto& c : tb::training::list_checkpoints(eager.toStdString()))
      QCOMPARE(tb::training::run_id_of(c.path), after);
    QCOMPARE(QString::fromStdString(tbtest::read_file((eager + "/logs/metrics.jsonl").toStdString())).count("\"event\":\"start\""), 1);
  }

  // Data parallel from the window: two worker processes (the CLI's launcher); the plots follow rank 0,
  // Stop stops both after the step they agree on, and rank 0 saves it.
  void severalProcessesTrainFromTheWindow() {
    QTemporaryDir out;
    auto w = tbtest::defaultWindow();
    shorten(*w->document(), out.path(), 3);
    w->setupPanel()->processesBox()->setValue(2);
    QSignalSpy steps(w->controller(), &tb::ui::TrainingController::stepLogged);
    QString error;
    QVERIFY2(w->startRun(&error), qPrintable(error));
    QCOMPARE(w->controller()->recipe(), QString("full_finetune_distributed"));
    QVERIFY(!w->pauseAction()->isEnabled());  // the workers cannot pause
    QVERIFY(w->controller()->waitUntilFinished(kRunTimeoutMs));
    QCoreApplication::processEvents();
    QVERIFY2(w->controller()->state() == RunState::Completed, qPrintable(w->controller()->stateMessage()));
    QCOMPARE(steps.count(), 3);
    const auto manifest = tb::training::read_manifest((w->controller()->outputDir() + "/epoch_0").toStdString());
    QVERIFY(manifest.has_value());
    QCOMPARE((*manifest)["world_size"].get<int>(), 2);

    shorten(*w->document(), out.path(), 1000);
    w->document()->setScalar("save_every_n_steps", "null");
    steps.clear();
    QVERIFY2(w->startRun(&error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 2, kRunTimeoutMs);
    w->stopAction()->trigger();
    QVERIFY(w->controller()->waitUntilFinished(kRunTimeoutMs));
    QCoreApplication::processEvents();
    QVERIFY2(w->controller()->state() == RunState::Stopped, qPrintable(w->controller()->stateMessage()));
    const auto saved = tb::training::newest_complete_checkpoint(w->controller()->outputDir().toStdString());
    QVERIFY(saved.has_value());
    QCOMPARE(saved->step, static_cast<int64_t>(steps.count()));
  }

  // 5 and 6. The Checkpoints tab selects a run's only checkpoint and says epochs done; progress says
  // there is no run before one, and an ended run leaves no ETA for the next.
  void checkpointsProgressAndEta() {
    QTemporaryDir out;
    auto w = tbtest::defaultWindow();
    QCOMPARE(w->progressBar()->text(), QString("no run yet"));
    shorten(*w->document(), out.path(), 1000);
    w->document()->setScalar("save_every_n_steps", "null");
    w->show();
    QSignalSpy steps(w->controller(), &tb::ui::TrainingController::stepLogged);
    QString error;
    QVERIFY2(w->startRun(&error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 3, kRunTimeoutMs);
    w->stopAction()->trigger();
    QVERIFY(w->controller()->waitUntilFinished(kRunTimeoutMs));
    QCoreApplication::processEvents();
    QCOMPARE(w->controller()->state(), RunState::Stopped);
    QCOMPARE(w->etaText(), QString("–"));

    tb::ui::CheckpointsPanel* panel = w->checkpointsPanel();
    QCOMPARE(panel->outputDir(), w->controller()->outputDir());
    QCOMPARE(panel->entries().size(), 1);
    QVERIFY(panel->selected());  // Reload works without picking the only row
    QVERIFY(panel->findChild<QPushButton*>("reloadButton")->isEnabled());
    QCOMPARE(panel->table()->horizontalHeaderItem(2)->text(), QString("Epochs done"));
    QVERIFY(panel->findChild<QPushButton*>("browseButton"));
    // Another run's folder can be browsed to.
    QTemporaryDir other;
    panel->setOutputDir(other.path());
    QCOMPARE(panel->entries().size(), 0);

    // 10: Open folder opens an absolute file: URL even for a relative output folder.
    panel->setOutputDir("build/runs");
    const QUrl url = panel->folderUrl();
    QVERIFY(url.isLocalFile());
    QVERIFY2(QDir::isAbsolutePath(url.toLocalFile()), qPrintable(url.toString()));
  }

  // 7. LoRA from the full fine-tune takes the LoRA config's learning rate, rank and alpha, and the file's
  // `# recipe:` line follows.
  void switchingTheRecipeTakesItsDefaults() {
    auto w = tbtest::defaultWindow();
    const YAML::Node lora = YAML::LoadFile(tb::config::find_config("tiny/lora_single_device"));
    QVERIFY(w->document()->text().contains("# recipe: full_finetune_single_device"));
    QComboBox* recipe = w->setupPanel()->recipeCombo();
    recipe->setCurrentIndex(recipe->findData(int(tb::ui::RecipeKind::Lora)));
    QCOMPARE(w->document()->scalar("optimizer.lr"), QString::fromStdString(lora["optimizer"]["lr"].Scalar()));
    QCOMPARE(w->document()->scalar("model.lora_rank"), QString::fromStdString(lora["model"]["lora_rank"].Scalar()));
    QCOMPARE(w->document()->scalar("model.lora_alpha"), QString::fromStdString(lora["model"]["lora_alpha"].Scalar()));
    QCOMPARE(w->setupPanel()->loraRankBox()->value(), lora["model"]["lora_rank"].as<int>());
    QVERIFY2(w->document()->text().contains("# recipe: lora_finetune_single_device") &&
                 !w->document()->text().contains("# recipe: full_finetune_single_device"),
             qPrintable(w->document()->text().left(300)));
    QVERIFY(w->document()->validate().ok());
    // And back: the full fine-tune's own learning rate.
    const YAML::Node full = YAML::LoadFile(tb::config::find_config("tiny/full_single_device"));
    recipe->setCurrentIndex(recipe->findData(int(tb::ui::RecipeKind::Full)));
    QCOMPARE(w->document()->scalar("optimizer.lr"), QString::fromStdString(full["optimizer"]["lr"].Scalar()));
  }

  // 8 and 9. At 1024x640 every tab fits (nothing clipped), a tile's value is shrunk to fit rather than
  // cut, the legend has a row of its own, and a warm-up is shaded on every panel.
  void fitsA1024x640Window() {
    auto w = tbtest::defaultWindow();
    w->resize(1024, 640);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QCOMPARE(w->size(), QSize(1024, 640));
    auto* tabs = qobject_cast<QTabWidget*>(w->centralWidget());
    const QSize have = tabs->currentWidget()->size();  // the page area every tab gets
    for (int i = 0; i < tabs->count(); ++i) {
      const QSize need = tabs->widget(i)->minimumSizeHint();
      QVERIFY2(need.width() <= have.width() && need.height() <= have.height(),
               qPrintable(QString("%1 needs %2x%3, has %4x%5").arg(tabs->tabText(i)).arg(need.width()).arg(need.height())
                              .arg(have.width()).arg(have.height())));
    }
    for (tb::ui::MetricTile* tile : w->findChildren<tb::ui::MetricTile*>()) {
      tile->setValue("20.0 MiB");
      QVERIFY2(tile->valueFits(), qPrintable(tile->caption() + " cuts its value"));
      tile->setValue("123.45 GiB");
      QVERIFY2(tile->valueFits(), qPrintable(tile->caption() + " cuts its value"));
    }
    QVERIFY(w->livePlot()->legendOutsidePanels());
    const int run = w->livePlot()->addRun("compile");
    w->livePlot()->append(run, {{1, 3.0, 10, 5.0, 0.1, true}, {2, 2.5, 100, 0.5, 0.1, false}});
    w->livePlot()->drainNow();
    QCOMPARE(w->livePlot()->warmupRegionCount(run), 1);
    QCOMPARE(w->livePlot()->warmupBandCount(run), 4);
  }

  // 10. Tooltips on every setup field, shortcuts for the run, About with the versions, the hardware
  // line, and a run that will not fit in memory is asked about.
  void tooltipsShortcutsAboutAndMemory() {
    auto w = tbtest::defaultWindow();
    for (QWidget* field : w->setupPanel()->findChildren<QWidget*>()) {
      const bool input = qobject_cast<QComboBox*>(field) || qobject_cast<QAbstractSpinBox*>(field) ||
                         qobject_cast<QLineEdit*>(field) || qobject_cast<QCheckBox*>(field) ||
                         qobject_cast<QPushButton*>(field);
      if (!input || qobject_cast<QLineEdit*>(field->parentWidget())) continue;  // a spin box's own line edit
      if (qobject_cast<QAbstractSpinBox*>(field->parentWidget()) || qobject_cast<QComboBox*>(field->parentWidget())) continue;
      QVERIFY2(!field->toolTip().isEmpty(), qPrintable(QString(field->metaObject()->className()) + " " +
                                                       field->objectName() + " has no tooltip"));
    }
    QCOMPARE(w->startAction()->shortcut(), QKeySequence("Ctrl+R"));
    QCOMPARE(w->pauseAction()->shortcut(), QKeySequence("Ctrl+P"));
    QCOMPARE(w->stopAction()->shortcut(), QKeySequence("Ctrl+."));
    const QString about = w->aboutText();
    QVERIFY2(about.contains(TUNEBENCH_VERSION) && about.contains(QString("Qt ") + qVersion()) &&
                 QRegularExpression(R"(LibTorch \d+\.\d+)").match(about).hasMatch() && about.contains("oneDNN"),
             qPrintable(about));
    QVERIFY2(w->hardwareText().startsWith(QString::number(QThread::idealThreadCount()) + " cores"),
             qPrintable(w->hardwareText()));

    QTemporaryDir out;
    shorten(*w->document(), out.path(), 1);
    w->document()->apply({ConfigEdit::scalar("batch_size", "65536"), ConfigEdit::scalar("tokenizer.max_seq_len", "8192")});
    QString asked;
    w->setMemoryConfirmation([&](const QString& why) {
      asked = why;
      return false;
    });
    QString error;
    QVERIFY(!w->startRun(&error));
    QVERIFY2(asked.contains("estimated to need") && asked.contains("available"), qPrintable(asked));
    QCOMPARE(w->controller()->state(), RunState::Idle);
  }
};

TB_TEST(TestWindowUx)
#include "test_window_ux.moc"
