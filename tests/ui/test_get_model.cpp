// "Get model…" on the Setup tab, against the loopback Hub server (tests/hub/fake_hub.py): a repo id is
// downloaded on a thread into the Hugging Face cache and opened as the model (the config points at its
// snapshot); a later window lists it among the models; Cancel stops a download that waits; a gated repo
// says what to do.
#include <QtTest>

#include "test_main.h"

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "ConfigDocument.h"
#include "GetModelDialog.h"
#include "MainWindow.h"
#include "RunSetupPanel.h"
#include "fake_hub.h"
#include "test_support.h"
#include "window_test_support.h"

namespace {
const std::string kCommit = "4444444444444444444444444444444444444444";
}

class TestGetModel : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<tbtest::FakeHub> server_;

  QString path(const QString& name) const { return dir_.filePath(name); }

  // Clicks "Get model…" with `repo` typed, and waits for the dialog's download to end.
  std::pair<bool, QString> getModel(tb::ui::MainWindow& w, const QString& repo, const std::function<void(tb::ui::GetModelDialog&)>& during = {}) {
    bool ok = false;
    QString message;
    w.setupPanel()->setGetModelHook([&](tb::ui::GetModelDialog& d) {
      d.repoBox()->setEditText(repo);
      QSignalSpy done(&d, &tb::ui::GetModelDialog::finished);
      d.startDownload();
      if (during) during(d);
      if (done.isEmpty() && !done.wait(120000)) return;
      ok = done.first().at(0).toBool();
      message = done.first().at(1).toString();
    });
    w.setupPanel()->getModelButton()->click();
    return {ok, message};
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    tbtest::isolateSettings("test_get_model", dir_.path());
    const std::string base = std::string(TB_SOURCE_DIR) + "/resources/base_model/";
    const nlohmann::json files = {{"config.json", {{"file", base + "config.json"}}},
                                  {"model.safetensors", {{"file", base + "model.safetensors"}, {"lfs", true}}}};
    const nlohmann::json repos = {{"repos",
                                   {{{"type", "model"}, {"id", "org/base"}, {"commits", {{kCommit, {{"files", files}}}}}, {"refs", {{"main", kCommit}}}},
                                    {{"type", "model"}, {"id", "org/slow"}, {"commits", {{kCommit, {{"files", files}}}}}, {"refs", {{"main", kCommit}}}},
                                    {{"type", "model"}, {"id", "org/gated"}, {"gated", true},
                                     {"commits", {{kCommit, {{"files", files}}}}}, {"refs", {{"main", kCommit}}}}}}};
    try {
      server_ = std::make_unique<tbtest::FakeHub>(repos, dir_.path());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    qputenv("HF_ENDPOINT", server_->endpoint().toUtf8());
    qputenv("HF_HOME", path("hf_home").toUtf8());
    qunsetenv("HF_TOKEN");
  }

  void cleanupTestCase() { server_.reset(); }

  void aDownloadedModelIsOpened() {
    auto w = tbtest::defaultWindow();
    const auto [ok, message] = getModel(*w, "org/base");
    QVERIFY2(ok, qPrintable(message));
    const QString snapshot = QString::fromLocal8Bit(qgetenv("HF_HUB_CACHE")) + "/models--org--base/snapshots/" + QString::fromStdString(kCommit);
    QCOMPARE(w->document()->scalar("model.path"), snapshot);
    QCOMPARE(w->document()->scalar("checkpointer.checkpoint_dir"), snapshot);
    QCOMPARE(w->setupPanel()->modelCombo()->currentText(), QString("org/base (downloaded)"));
    QVERIFY2(w->setupPanel()->modelInfoText().contains("Llama · dim 128 · 4 layers"), qPrintable(w->setupPanel()->modelInfoText()));
    // A window opened later lists it among the models, one click away.
    auto later = tbtest::defaultWindow();
    QVERIFY(later->setupPanel()->modelCombo()->findText("org/base (downloaded)") >= 0);
  }

  // A download waiting on the Hub (a 429 asking for 60 s) stops on Cancel (had it not, the retry after the
  // wait would have succeeded); the model is left as it was.
  void cancelStopsADownload() {
    auto w = tbtest::defaultWindow();
    const QString before = w->document()->scalar("model.path");
    server_->control({{"rate_limit", {{"/api/models/org/slow", 60}}}});
    const auto [ok, message] = getModel(*w, "org/slow", [](tb::ui::GetModelDialog& d) {
      QTRY_VERIFY_WITH_TIMEOUT(d.running(), 10000);
      QTest::qWait(300);
      d.cancelButton()->click();
    });
    QVERIFY(!ok);
    QVERIFY2(message.startsWith("Cancelled"), qPrintable(message));
    QCOMPARE(w->document()->scalar("model.path"), before);
  }

  void aGatedRepoSaysWhatToDo() {
    auto w = tbtest::defaultWindow();
    const auto [ok, message] = getModel(*w, "org/gated");
    QVERIFY(!ok);
    QVERIFY2(message.contains("org/gated is gated: accept its conditions at"), qPrintable(message));
  }
};

TB_TEST(TestGetModel)
#include "test_get_model.moc"
