// The dataset box's "From the Hub…" and "Datasets on this computer…", offscreen, against dataset repos of the
// loopback Hub (tests/hub/fake_hub.py): Check says the configs, splits and the download size before any
// data comes; First rows fetches the split's files and shows its first rows; Use makes it the config's
// dataset (the component its first row calls for, source/name/split), and the preview tokenizes it. A repo
// that is not there says so; a cached one is listed with its size and used from the list.
#include <QtTest>

#include "test_main.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>

#include <nlohmann/json.hpp>

#include "HubDatasetDialog.h"
#include "LocalDatasetsDialog.h"
#include "MainWindow.h"
#include "ModelInfo.h"
#include "RunSetupPanel.h"
#include "fake_hub.h"
#include "test_support.h"
#include "window_test_support.h"

namespace {
const std::string kCommit = "7777777777777777777777777777777777777777";

std::string chats(const std::string& topic, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += nlohmann::json({{"messages",
                            {{{"role", "user"}, {"content", "Tell me about " + topic + " " + std::to_string(i)}},
                             {{"role", "assistant"}, {"content", "Here is " + topic + " number " + std::to_string(i)}}}}})
               .dump() +
           "\n";
  return out;
}
}  // namespace

class TestHubDatasetDialog : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<tbtest::FakeHub> server_;
  QString path(const QString& name) const { return dir_.filePath(name); }

  // Picks `item` in the dataset box (as a click would), with `hook` driving its dialog.
  void choose(tb::ui::MainWindow& w, const QString& item) {
    QComboBox* box = w.setupPanel()->datasetCombo();
    const int index = box->findText(item);
    QVERIFY2(index >= 0, qPrintable(item));
    Q_EMIT box->activated(index);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    tbtest::isolateSettings("test_hub_dataset_dialog", dir_.path());
    tbtest::write_file(path("short.jsonl").toStdString(), chats("cats", 3));
    tbtest::write_file(path("long.jsonl").toStdString(), chats("dogs", 40));
    const std::string card =
        "---\nconfigs:\n- config_name: short\n  default: true\n  data_files: short/*.jsonl\n- config_name: long\n  data_files:\n"
        "  - split: train\n    path: long/train.jsonl\n---\n# Chats\n";
    const auto file = [](const QString& p) { return nlohmann::json{{"file", p.toStdString()}, {"lfs", true}}; };
    const nlohmann::json repos = {
        {"repos",
         {{{"type", "dataset"}, {"id", "org/chats"},
           {"commits", {{kCommit, {{"files", {{"README.md", {{"text", card}}},
                                              {"short/data.jsonl", file(path("short.jsonl"))},
                                              {"long/train.jsonl", file(path("long.jsonl"))}}}}}}},
           {"refs", {{"main", kCommit}}}}}}};
    try {
      server_ = std::make_unique<tbtest::FakeHub>(repos, dir_.path());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    qputenv("HF_ENDPOINT", server_->endpoint().toUtf8());
    qputenv("HF_HOME", path("hf_home").toUtf8());
    qputenv("HF_HUB_CACHE", path("cache").toUtf8());
    qunsetenv("HF_HUB_OFFLINE");
    qunsetenv("HF_TOKEN");
  }

  void cleanupTestCase() { server_.reset(); }

  void checkFirstRowsThenUse() {
    auto w = tbtest::defaultWindow();
    const QString longFile = path("cache") + "/datasets--org--chats/snapshots/" + QString::fromStdString(kCommit) + "/long/train.jsonl";
    w->setupPanel()->setHubDatasetHook([&](tb::ui::HubDatasetDialog& d) {
      d.repoField()->setText("org/chats");
      QSignalSpy checked(&d, &tb::ui::HubDatasetDialog::checked);
      d.checkButton()->click();
      QVERIFY(checked.wait(60000));
      QVERIFY2(checked.first().at(0).toBool(), qPrintable(d.status()->text()));
      // The card's configs, the default config's split and its size, and nothing fetched yet.
      QCOMPARE(d.configBox()->count(), 2);
      QCOMPARE(d.configBox()->itemText(1), QString("long"));
      const QString size = tb::ui::formatBytes(double(QFileInfo(path("short.jsonl")).size()));
      QVERIFY2(d.status()->text().contains("splits train") && d.status()->text().contains("1 file(s), " + size + " (" + size + " to download)"),
               qPrintable(d.status()->text()));
      QVERIFY(!QFileInfo::exists(longFile));
      QVERIFY(!d.useButton()->isEnabled());  // Use takes the first rows, read next
      d.configBox()->setCurrentText("long");
      d.splitField()->setText("train[:50%]");
      QSignalSpy shown(&d, &tb::ui::HubDatasetDialog::rowsShown);
      d.rowsButton()->click();
      QVERIFY(shown.wait(60000));
      QVERIFY2(shown.first().at(0).toBool(), qPrintable(d.status()->text()));
      QVERIFY(QFileInfo::exists(longFile));
      QVERIFY2(d.firstRows()->toPlainText().contains("Tell me about dogs 0") && d.firstRows()->toPlainText().contains("dogs 4") &&
                   !d.firstRows()->toPlainText().contains("dogs 5"),
               qPrintable(d.firstRows()->toPlainText()));
      QVERIFY(d.useButton()->isEnabled());
      d.useButton()->click();
    });
    QSignalSpy preview(w->setupPanel(), &tb::ui::RunSetupPanel::previewReady);
    choose(*w, "From the Hub…");
    QCOMPARE(w->document()->scalar("dataset._component_"), QString("torchtune.datasets.chat_dataset"));
    QCOMPARE(w->document()->scalar("dataset.source"), QString("org/chats"));
    QCOMPARE(w->document()->scalar("dataset.name"), QString("long"));
    QCOMPARE(w->document()->scalar("dataset.split"), QString("train[:50%]"));
    QCOMPARE(w->document()->scalar("dataset.conversation_column"), QString("messages"));
    QVERIFY(!w->document()->value("dataset.data_files").IsDefined());
    // The preview reads it as the run will: 20 of the 40 conversations.
    QTRY_VERIFY_WITH_TIMEOUT(w->setupPanel()->previewView()->toPlainText().contains("20 samples"), 60000);
    QVERIFY2(w->setupPanel()->previewView()->toPlainText().contains("Here is dogs number 0"),
             qPrintable(w->setupPanel()->previewView()->toPlainText()));
  }

  void aRepoThatIsNotThereSaysSo() {
    tb::ui::HubDatasetDialog d;
    d.repoField()->setText("org/missing");
    QSignalSpy checked(&d, &tb::ui::HubDatasetDialog::checked);
    d.check();
    QVERIFY(checked.wait(60000));
    QVERIFY(!checked.first().at(0).toBool());
    QVERIFY2(d.status()->text().contains("org/missing"), qPrintable(d.status()->text()));
    QVERIFY(!d.useButton()->isEnabled());
  }

  // After checkFirstRowsThenUse: the cached repo is listed with what its snapshot holds (the card and the
  // long config's file), and used from there: its default config, whose file is fetched then.
  void datasetsOnThisComputer() {
    auto w = tbtest::defaultWindow();
    w->setupPanel()->setLocalDatasetsHook([&](tb::ui::LocalDatasetsDialog& d) {
      QCOMPARE(d.table()->rowCount(), 1);
      QCOMPARE(d.table()->item(0, 0)->text(), QString("org/chats"));
      const double bytes = double(QFileInfo(path("long.jsonl")).size()) +
                           double(QFileInfo(path("cache") + "/datasets--org--chats/snapshots/" + QString::fromStdString(kCommit) + "/README.md").size());
      QCOMPARE(d.table()->item(0, 1)->text(), tb::ui::formatBytes(bytes));
      d.useButton()->click();
    });
    choose(*w, "Datasets on this computer…");
    QCOMPARE(w->document()->scalar("dataset.source"), QString("org/chats"));
    QCOMPARE(w->document()->scalar("dataset._component_"), QString("torchtune.datasets.chat_dataset"));
    QCOMPARE(w->document()->scalar("dataset.split"), QString("train"));
    QTRY_VERIFY_WITH_TIMEOUT(w->setupPanel()->previewView()->toPlainText().contains("3 samples"), 60000);
  }
};

TB_TEST(TestHubDatasetDialog)
#include "test_hub_dataset_dialog.moc"
