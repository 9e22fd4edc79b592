// The window and the engine do not disagree (the window issue, items 5 and 6): a dataset chosen in the
// form keeps what the setup said of masking; a preset chosen after a model folder drops the folder's
// tokenizer and keeps the folder one click away; the command line's overrides are read as the CLI reads
// them; a finished checkpoint says nothing is left to train; and the small things that hour met.
#include <QtTest>

#include "test_main.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "ChatPanel.h"
#include "CheckpointsPanel.h"
#include "ConfigDocument.h"
#include "MainWindow.h"
#include "MetricTile.h"
#include "RunHistory.h"
#include "RunSetupPanel.h"
#include "TrainingController.h"
#include "test_support.h"
#include "window_test_support.h"

using tb::ui::RunState;

class TestWindowEngineAgree : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    tbtest::isolateSettings("test_window_engine_agree", settingsDir_.path());
  }

  // A CSV (or chat) file keeps train_on_input: false; alpaca_dataset's own default would train on prompts.
  void aChosenDatasetKeepsItsMasking() {
    QTemporaryDir dir;
    tbtest::write_file(dir.filePath("rows.csv").toStdString(), "instruction,input,output\nName a colour.,,Blue.\nCount to two.,,One two.\n");
    tbtest::write_file(dir.filePath("chat.jsonl").toStdString(),
              R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]})"
              "\n");
    auto w = tbtest::defaultWindow();
    QCOMPARE(w->document()->scalar("dataset.train_on_input"), QString("false"));
    QString error;
    QVERIFY2(w->setupPanel()->useDatasetFile(dir.filePath("rows.csv"), &error), qPrintable(error));
    QCOMPARE(w->document()->scalar("dataset.source"), QString("csv"));
    QCOMPARE(w->document()->scalar("dataset.train_on_input"), QString("false"));
    QVERIFY2(w->document()->validate().ok(), "the CSV setup does not validate");
    QVERIFY2(w->setupPanel()->useDatasetFile(dir.filePath("chat.jsonl"), &error), qPrintable(error));
    QVERIFY(w->document()->scalar("dataset._component_").endsWith("chat_dataset"));
    QCOMPARE(w->document()->scalar("dataset.train_on_input"), QString("false"));
    QCOMPARE(w->document()->scalar("dataset.source"), QString("json"));
  }

  // A preset after a model folder: the folder's tokenizer goes with it; the folders stay in the list.
  void aPresetAfterAFolderTakesBackTheTokenizer() {
    QTemporaryDir folder;
    for (const QString& name : QDir("resources/base_model").entryList(QDir::Files))
      QVERIFY(QFile::copy("resources/base_model/" + name, folder.filePath(name)));
    QVERIFY(QFile::copy("tests/data/tokenizers/smollm2/tokenizer.json", folder.filePath("tokenizer.json")));
    auto w = tbtest::defaultWindow();
    const QString tokenizerBefore = w->document()->scalar("tokenizer.path");
    QString error;
    QVERIFY2(w->setupPanel()->openModelFolder(folder.path(), &error), qPrintable(error));
    QCOMPARE(w->document()->scalar("tokenizer._component_"), QString("tunebench.data.hf_tokenizer"));
    QVERIFY2(w->windowTitle().contains(QFileInfo(folder.path()).fileName()), qPrintable(w->windowTitle()));
    w->document()->setModelPreset("llama2_7b");
    QVERIFY2(w->windowTitle().contains("llama2_7b"), qPrintable(w->windowTitle()));
    QCOMPARE(w->document()->scalar("tokenizer.path"), tokenizerBefore);
    QVERIFY(w->document()->scalar("tokenizer._component_") != "tunebench.data.hf_tokenizer");
    // Both folders are still in the model list, and picking one opens it again.
    QComboBox* models = w->setupPanel()->modelCombo();
    const int opened = models->findData(QFileInfo(folder.path()).absoluteFilePath());
    const int bundled = models->findData(QFileInfo("resources/base_model").absoluteFilePath());
    QVERIFY2(opened >= 0 && bundled >= 0, qPrintable(QString("%1 %2").arg(opened).arg(bundled)));
    models->setCurrentIndex(bundled);
    Q_EMIT models->activated(bundled);
    QCOMPARE(QFileInfo(w->document()->scalar("model.path")).absoluteFilePath(),
             QFileInfo("resources/base_model").absoluteFilePath());
  }

  // The command line's overrides as tunebench-cli reads them: None is null, ~key removes, a bad one is said.
  void overridesAreReadAsTheCliReadsThem() {
    auto w = tbtest::defaultWindow({"optimizer.weight_decay=None", "~clip_grad_norm", "optimizer.lr=3e-4", "epochs"});
    QVERIFY(w->document()->value("optimizer.weight_decay").IsNull());
    QVERIFY(!w->document()->value("clip_grad_norm").IsDefined());
    QCOMPARE(w->document()->scalar("optimizer.lr"), QString("3e-4"));
    QVERIFY2(w->startupMessage().contains("epochs") && w->startupMessage().contains("expected key=value"),
             qPrintable(w->startupMessage()));
  }

  // Reload on the last epoch's checkpoint: nothing is left to train, said before anything starts.
  void aFinishedCheckpointHasNothingLeft() {
    QTemporaryDir out;
    auto w = tbtest::defaultWindow();
    tbtest::shorten(*w->document(), out.path(), 1);
    QString error;
    QVERIFY2(tbtest::runToTheEnd(*w, &error), qPrintable(error));
    const tb::ui::CheckpointEntry* last = w->checkpointsPanel()->selected();
    QVERIFY(last && last->name == "epoch_0");
    QVERIFY(!w->reloadCheckpoint(*last, &error));
    QVERIFY2(error.contains("Nothing is left to train") && error.contains("Epochs"), qPrintable(error));
    QCOMPARE(w->controller()->state(), RunState::Completed);  // the finished run, untouched
    QVERIFY2(w->bannerText().contains("Nothing is left to train"), qPrintable(w->bannerText()));
    // With another epoch, it trains on.
    w->document()->setScalar("epochs", "2");
    QVERIFY2(w->reloadCheckpoint(*w->checkpointsPanel()->selected(), &error), qPrintable(error));
    QVERIFY(w->controller()->waitUntilFinished(tbtest::kRunTimeoutMs));
    QCOMPARE(w->controller()->state(), RunState::Completed);

    // Chat: a checkpoint chosen by hand is offered again after a restart; a pane names what it will load.
    const QString chosen = QDir(out.path()).absoluteFilePath("elsewhere");
    QVERIFY(QDir().rename(QFileInfo(w->controller()->outputDir()).absoluteFilePath() + "/epoch_1", chosen));
    QVERIFY2(w->chatPanel()->chooseCheckpoint(chosen, &error), qPrintable(error));
    auto again = tbtest::defaultWindow();
    QVERIFY(again->chatPanel()->sourceBox()->findData(chosen) >= 0);
    again->chatPanel()->sourceBox()->setCurrentIndex(0);
    again->document()->setModelPreset("llama2_7b");
    QVERIFY2(again->chatPanel()->paneTitle(0).contains("llama2_7b"), qPrintable(again->chatPanel()->paneTitle(0)));
  }

  // Small things: LoRA alpha as written, the tokens tile says what it counts, About counts in words.
  void smallThings() {
    auto w = tbtest::defaultWindow();
    w->setupPanel()->loraAlphaBox()->setValue(32);
    QCOMPARE(w->setupPanel()->loraAlphaBox()->text(), QString("32"));
    for (tb::ui::MetricTile* tile : w->findChildren<tb::ui::MetricTile*>())
      if (tile->caption().contains("tokens")) QCOMPARE(tile->caption(), QString("trained tokens / s"));
    QVERIFY2(!w->aboutText().contains(" 1 threads") && !w->aboutText().contains(" 1 cores"), qPrintable(w->aboutText()));
    // A misspelled batch_size is shown as missing, not as batch size 1.
    QVERIFY(!w->setupPanel()->batchSizeBox()->property("missingKey").toBool());
    QString text = w->document()->text();  // misspelled in the Config tab's editor
    QVERIFY(text.contains("\nbatch_size:"));
    text.replace("\nbatch_size:", "\nbatchsize:");
    w->document()->setText(text, tb::ui::ConfigDocument::Origin::Text);
    QVERIFY(w->setupPanel()->batchSizeBox()->property("missingKey").toBool());
    QVERIFY2(w->setupPanel()->batchSizeBox()->toolTip().startsWith("Not set in the config"),
             qPrintable(w->setupPanel()->batchSizeBox()->toolTip()));
    // Start lists every problem, with its count in words.
    QString error;
    QVERIFY(!w->startRun(&error));
    QVERIFY2(error.startsWith("The config has") && error.contains("batchsize") && !error.contains("problem(s)"),
             qPrintable(error));
  }

  // A dataset the preview could not read is refused at Start with the preview's message; the plots of the
  // run before do not keep their axes.
  void startRefusesADatasetThePreviewMarkedBroken() {
    QTemporaryDir dir;
    tbtest::write_file(dir.filePath("broken.json").toStdString(), "[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n  {\"instruction\": \n");
    auto w = tbtest::defaultWindow();
    QSignalSpy ready(w->setupPanel(), &tb::ui::RunSetupPanel::previewReady);
    w->document()->setScalar("dataset.data_files", dir.filePath("broken.json"));
    QTRY_VERIFY_WITH_TIMEOUT(!w->setupPanel()->datasetProblem().isEmpty(), 60000);
    QString error;
    QVERIFY(!w->startRun(&error));
    QVERIFY2(error.startsWith("The dataset cannot be read") && error.contains("broken.json"), qPrintable(error));
    QCOMPARE(w->controller()->state(), RunState::Idle);
  }

  // `tunebench --help` answers without a display.
  void helpNeedsNoDisplay() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM");
    env.remove("DISPLAY");
    env.remove("WAYLAND_DISPLAY");
    p.setProcessEnvironment(env);
    p.start(QString(TB_BINARY_DIR) + "/bin/tunebench", {"--help"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(p.readAllStandardOutput().contains("--config"), "no help text");
  }
};

TB_TEST(TestWindowEngineAgree)
#include "test_window_engine_agree.moc"
