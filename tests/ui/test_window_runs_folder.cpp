// Where the window's runs land and how several processes share the cores (the window issue, items 3
// and 4), and the installed layout's (issue 45: started anywhere, bundled configs read-only): a bundled config's relative output_dir goes under the user's data folder (not under the share
// folder or the working directory), the full path is shown with a button that opens it; two worker
// processes on this machine get the cores divided among them, said in the banner, and Pause says why it
// is off.
#include <QtTest>

#include "test_main.h"

#include <QAction>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QThread>

#include "ConfigDocument.h"
#include "MainWindow.h"
#include "RunSetupPanel.h"
#include "TrainingController.h"
#include "config/config.h"
#include "window_test_support.h"

using tb::ui::RunState;

class TestWindowRunsFolder : public QObject {
  Q_OBJECT
  QTemporaryDir settingsDir_;

 private Q_SLOTS:
  void initTestCase() {
    tbtest::isolateSettings("test_window_runs_folder", settingsDir_.path());
  }

  void relativeOutputGoesToTheUserDataFolder() {
    QTemporaryDir data;
    const QByteArray before = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
    auto w = tbtest::defaultWindow();
    const QString configured = w->document()->scalar("output_dir");
    QVERIFY2(QDir::isRelativePath(configured), qPrintable(configured));  // the bundled default's
    const QString expected = data.path() + "/tunebench/runs/" + QFileInfo(configured).fileName();
    QCOMPARE(w->runsFolder(), expected);
    QVERIFY2(w->nextRunFolder().startsWith(expected + "/full-eager-"), qPrintable(w->nextRunFolder()));
    QCOMPARE(w->setupPanel()->runsPathField()->text(), expected);
    QVERIFY(w->setupPanel()->findChild<QPushButton*>("openRunsButton"));

    // A run lands there, nowhere near the source tree or the share folder.
    w->document()->apply({tb::ui::ConfigEdit::scalar("max_steps_per_epoch", "1"), tb::ui::ConfigEdit::scalar("epochs", "1"),
                          tb::ui::ConfigEdit::scalar("num_threads", "1"), tb::ui::ConfigEdit::scalar("batch_size", "4")});
    QString error;
    QVERIFY2(tbtest::runToTheEnd(*w, &error), qPrintable(error));
    qputenv("XDG_DATA_HOME", before);
    const QString run = w->controller()->outputDir();
    QVERIFY2(run.startsWith(expected + "/"), qPrintable(run));
    QVERIFY(QFileInfo(run + "/logs/metrics.jsonl").isFile());
    QVERIFY2(w->bannerText().contains(run), qPrintable(w->bannerText()));

    // An absolute output folder is used as it is.
    QTemporaryDir own;
    w->document()->setScalar("output_dir", own.path());
    QCOMPARE(w->runsFolder(), QDir(own.path()).absolutePath());
  }

  // Started from a folder that is not the source tree (a desktop launcher starts it in the home folder):
  // the embedded default's model, weights and tokenizer are found in the share folder and it trains; the
  // working folder gets nothing.
  void startedAnywhereTheDefaultRuns() {
    QTemporaryDir elsewhere, data;
    const QString before = QDir::currentPath();
    QDir::setCurrent(elsewhere.path());
    const QByteArray dataBefore = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
    auto w = tbtest::defaultWindow();
    const QString share = QString::fromStdString(tb::config::share_dir());
    const QString weights = w->setupPanel()->weightsText();
    const QString model = w->setupPanel()->modelInfoText();
    w->document()->apply({tb::ui::ConfigEdit::scalar("max_steps_per_epoch", "1"), tb::ui::ConfigEdit::scalar("epochs", "1"),
                          tb::ui::ConfigEdit::scalar("num_threads", "1"), tb::ui::ConfigEdit::scalar("batch_size", "4")});
    QString error;
    const bool ran = tbtest::runToTheEnd(*w, &error);
    const QStringList leftHere = QDir(elsewhere.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
    QDir::setCurrent(before);
    qputenv("XDG_DATA_HOME", dataBefore);
    QVERIFY2(weights.contains(share + "/resources/base_model (1 file"), qPrintable(weights));
    QVERIFY2(model.contains("layers"), qPrintable(model));  // read from the share folder's config.json
    QVERIFY2(ran, qPrintable(error));
    QCOMPARE(w->controller()->state(), RunState::Completed);
    QVERIFY2(w->controller()->outputDir().startsWith(data.path()), qPrintable(w->controller()->outputDir()));
    QVERIFY2(leftHere.isEmpty(), qPrintable(leftHere.join(", ")));
  }

  // A bundled config opened by its path is the product's: Save asks for a new path.
  void aBundledConfigOpensReadOnly() {
    tb::ui::ConfigDocument doc;
    const QString path = QString::fromStdString(tb::config::find_config("tiny/lora_single_device"));
    QString error;
    QVERIFY2(doc.loadFile(path, &error), qPrintable(error));
    QVERIFY2(doc.filePath().isEmpty(), qPrintable(doc.filePath()));
    QCOMPARE(doc.displayName(), QString("tiny/lora_single_device.yaml"));
    QTemporaryDir own;
    QVERIFY(QFile::copy(path, own.filePath("mine.yaml")));
    QVERIFY2(doc.loadFile(own.filePath("mine.yaml"), &error), qPrintable(error));
    QCOMPARE(doc.filePath(), own.filePath("mine.yaml"));
  }

  // Two processes asked for more threads than the cores: each gets its share, and the banner says so.
  void processesShareTheCores() {
    QTemporaryDir out;
    auto w = tbtest::defaultWindow();
    tbtest::shorten(*w->document(), out.path(), 1);
    const int cores = QThread::idealThreadCount();
    w->document()->setScalar("num_threads", QString::number(cores));
    w->setupPanel()->processesBox()->setMaximum(std::max(2, cores));
    w->setupPanel()->processesBox()->setValue(2);
    QString error;
    QVERIFY2(w->startRun(&error), qPrintable(error));
    const QString each = QString("%1 thread").arg(std::max(1, cores / 2));
    QVERIFY2(w->bannerText().contains("2 processes on " + QString::number(cores) + " cores: " + each),
             qPrintable(w->bannerText()));
    QVERIFY(!w->pauseAction()->isEnabled());
    QVERIFY2(w->pauseAction()->toolTip().contains("several processes"), qPrintable(w->pauseAction()->toolTip()));
    QVERIFY(w->controller()->waitUntilFinished(tbtest::kRunTimeoutMs));
    QCoreApplication::processEvents();
    QVERIFY2(w->controller()->state() == RunState::Completed, qPrintable(w->controller()->stateMessage()));
    // The workers ran with their share: the config the run recorded says so.
    QFile log(w->controller()->outputDir() + "/logs/metrics.jsonl");
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QByteArray text = log.readAll();
    QVERIFY2(text.contains(QString("\"threads\":%1").arg(std::max(1, cores / 2)).toUtf8()), text.left(600).constData());
  }
};

TB_TEST(TestWindowRunsFolder)
#include "test_window_runs_folder.moc"
