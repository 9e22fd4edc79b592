// "Get model…" and "On this computer…" on the Setup tab, against the loopback Hub server
// (tests/hub/fake_hub.py): a repo id is checked (size, architecture, memory) before anything is fetched,
// then downloaded on a thread into the Hugging Face cache and opened as the model (the config points at
// its snapshot); a later window lists it among the models; Cancel stops a download that waits; a gated
// repo says what to do and takes a token, saved where huggingface_hub reads it; the cache's trainable
// models are listed with family, parameters and size, and open in one click.
#include <QtTest>

#include "test_main.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QTableWidget>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "ConfigDocument.h"
#include "GetModelDialog.h"
#include "LocalModelsDialog.h"
#include "MainWindow.h"
#include "ModelInfo.h"
#include "RunSetupPanel.h"
#include "checkpoint/hf_config.h"
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
  std::function<void(tb::ui::GetModelDialog&)> checkedHook_;  // between the check and the download

  QString path(const QString& name) const { return dir_.filePath(name); }

  // Clicks "Get model…" with `repo` typed, and waits for the dialog's download to end.
  std::pair<bool, QString> getModel(tb::ui::MainWindow& w, const QString& repo, const std::function<void(tb::ui::GetModelDialog&)>& during = {}) {
    bool ok = false;
    QString message;
    w.setupPanel()->setGetModelHook([&](tb::ui::GetModelDialog& d) {
      d.repoBox()->setEditText(repo);
      QSignalSpy checked(&d, &tb::ui::GetModelDialog::checked);
      d.downloadButton()->click();  // the first press checks
      if (!checked.wait(60000) || !checked.first().at(0).toBool()) {
        message = checked.isEmpty() ? QString("no answer") : checked.first().at(1).toString();
        return;
      }
      if (checkedHook_) checkedHook_(d);
      QSignalSpy done(&d, &tb::ui::GetModelDialog::finished);
      d.downloadButton()->click();  // the second downloads
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
    server_->control({{"rate_limit", {{"/org/slow/resolve/" + kCommit + "/model.safetensors", 60}}}});
    const auto [ok, message] = getModel(*w, "org/slow", [](tb::ui::GetModelDialog& d) {
      QTRY_VERIFY_WITH_TIMEOUT(d.running(), 10000);
      QTest::qWait(300);
      d.cancelButton()->click();
    });
    QVERIFY(!ok);
    QVERIFY2(message.startsWith("Cancelled"), qPrintable(message));
    QCOMPARE(w->document()->scalar("model.path"), before);
  }

  // A gated repo says what to do; with a token given and "save" ticked it downloads, and the token is where
  // huggingface_hub reads it (HF_HOME/token, this user's only), so the next check needs no token typed.
  void aGatedRepoSaysWhatToDoAndTakesAToken() {
    auto w = tbtest::defaultWindow();
    const auto [ok, message] = getModel(*w, "org/gated");
    QVERIFY(!ok);
    QVERIFY2(message.contains("org/gated is gated: accept its conditions at"), qPrintable(message));

    const QString tokenFile = path("hf_home/token");
    QFile::remove(tokenFile);
    checkedHook_ = [](tb::ui::GetModelDialog& d) {};
    w->setupPanel()->setGetModelHook([&](tb::ui::GetModelDialog& d) {
      d.repoBox()->setEditText("org/gated");
      d.tokenField()->setText("hf_accepted");
      d.saveTokenBox()->setChecked(true);
      QSignalSpy checked(&d, &tb::ui::GetModelDialog::checked);
      d.downloadButton()->click();
      QVERIFY(checked.wait(60000));
      QVERIFY2(checked.first().at(0).toBool(), qPrintable(checked.first().at(1).toString()));
      QSignalSpy done(&d, &tb::ui::GetModelDialog::finished);
      d.downloadButton()->click();
      QVERIFY(done.wait(60000));
      QVERIFY2(done.first().at(0).toBool(), qPrintable(done.first().at(1).toString()));
    });
    w->setupPanel()->getModelButton()->click();
    QCOMPARE(QString::fromStdString(tbtest::read_file(tokenFile.toStdString())), QString("hf_accepted"));
    QCOMPARE(QFile::permissions(tokenFile) & (QFile::ReadGroup | QFile::ReadOther | QFile::WriteGroup | QFile::WriteOther),
             QFileDevice::Permissions());
    checkedHook_ = {};
    const auto [again, why] = getModel(*w, "org/gated");  // no token typed: the saved one
    QVERIFY2(again, qPrintable(why));
    QFile::remove(tokenFile);
  }

  // Check tells, before any file's bytes are fetched, the size to fetch, the architecture and what training
  // it as set up needs; the weights are fetched only by the second press. A repo already here has nothing
  // to fetch.
  void checkSaysSizeAndMemoryBeforeFetching() {
    auto w = tbtest::defaultWindow();
    qputenv("HF_HUB_CACHE", path("cache_check").toUtf8());
    QString said;
    server_->clearLog();
    checkedHook_ = [&](tb::ui::GetModelDialog& d) {
      said = d.status()->text();
      QVERIFY2(d.downloadButton()->text().startsWith("Download 5"), qPrintable(d.downloadButton()->text()));
      for (const auto& r : server_->log())  // the weights' bytes are on the CDN: not asked for yet
        QVERIFY2(r["port"] != "cdn", r.dump().c_str());
    };
    const auto [ok, message] = getModel(*w, "org/base");
    checkedHook_ = {};
    QVERIFY2(ok, qPrintable(message));
    QVERIFY2(said.contains("org/base at 4444444: 5.0") && said.contains("in 2 files, 5.0"), qPrintable(said));
    QVERIFY2(said.contains("Llama · dim 128 · 4 layers"), qPrintable(said));
    QVERIFY2(said.contains("Training it as set up (") && said.contains("needs about"), qPrintable(said));
    int cdn = 0;
    for (const auto& r : server_->log()) cdn += r["port"] == "cdn";
    QCOMPARE(cdn, 1);  // the download's one fetch of the weights

    w->setupPanel()->setGetModelHook([&](tb::ui::GetModelDialog& d) {
      d.repoBox()->setEditText("org/base");
      QSignalSpy checked(&d, &tb::ui::GetModelDialog::checked);
      d.downloadButton()->click();
      QVERIFY(checked.wait(60000));
      QVERIFY2(checked.first().at(1).toString().contains("none of it to fetch"), qPrintable(checked.first().at(1).toString()));
      QCOMPARE(d.downloadButton()->text(), QString("Open"));
    });
    w->setupPanel()->getModelButton()->click();
  }

  // The suggested models are those the estimate says fit (here: under a billion parameters, by the
  // engine's preset of each), each with the estimate as its tip; the rest are counted in the box's tip.
  void suggestionsAreTheModelsThatFit() {
    tb::ui::GetModelDialog d;
    QVERIFY(d.repoBox()->findText("meta-llama/Llama-3.2-3B-Instruct") >= 0);  // no estimate yet: all
    d.setFitEstimate([](const tb::models::ModelArgs& args) {
      return tb::ui::GetModelDialog::Fit{QString("needs %1").arg(args.parameter_count()), args.parameter_count() < 1000000000};
    });
    for (const char* fits : {"HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-360M-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"})
      QVERIFY2(d.repoBox()->findText(fits) >= 0, fits);
    for (const char* big : {"HuggingFaceTB/SmolLM2-1.7B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct",
                            "microsoft/Phi-4-mini-instruct"})
      QVERIFY2(d.repoBox()->findText(big) < 0, big);
    const int small = d.repoBox()->findText("HuggingFaceTB/SmolLM2-135M-Instruct");
    QVERIFY2(d.repoBox()->itemData(small, Qt::ToolTipRole).toString().startsWith("needs 1"),  // 134.5 M
             qPrintable(d.repoBox()->itemData(small, Qt::ToolTipRole).toString()));
    QVERIFY2(d.repoBox()->toolTip().contains("more that Tunebench supports would not fit this computer"), qPrintable(d.repoBox()->toolTip()));
  }

  // "On this computer…" lists the cache's models Tunebench trains (family, parameters, size on disk),
  // counts the others, and opens the one chosen.
  void modelsOnThisComputer() {
    const QString cache = path("cache_local");
    qputenv("HF_HUB_CACHE", cache.toUtf8());
    auto w = tbtest::defaultWindow();
    const auto [ok, message] = getModel(*w, "org/base");
    QVERIFY2(ok, qPrintable(message));
    // Another tool's download of a model Tunebench does not train.
    const QString other = cache + "/models--org--bert/snapshots/" + QString::fromStdString(kCommit);
    QVERIFY(QDir().mkpath(other));
    tbtest::write_file((other + "/config.json").toStdString(), R"({"model_type": "bert", "hidden_size": 8})");
    w = tbtest::defaultWindow();  // a new window: its setup's own model
    const QString before = w->document()->scalar("model.path");
    QVERIFY(!before.contains("models--org--base"));
    w->setupPanel()->setLocalModelsHook([&](tb::ui::LocalModelsDialog& d) {
      QCOMPARE(d.table()->rowCount(), 1);
      QCOMPARE(d.table()->item(0, 0)->text(), QString("org/base"));
      QCOMPARE(d.table()->item(0, 1)->text(), QString("Llama"));
      const auto args = tb::checkpoint::read_hf_model_args(std::string(TB_SOURCE_DIR) + "/resources/base_model");
      QCOMPARE(d.table()->item(0, 2)->text(), tb::ui::formatCount(args.parameter_count()));
      QCOMPARE(d.table()->item(0, 3)->text(), tb::ui::formatBytes(double(QFileInfo(QString(TB_SOURCE_DIR) + "/resources/base_model/model.safetensors").size() +
                                                                     QFileInfo(QString(TB_SOURCE_DIR) + "/resources/base_model/config.json").size())));
      QVERIFY2(d.note()->text().contains("Tunebench does not train 1 other repo there"), qPrintable(d.note()->text()));
      d.openButton()->click();
    });
    w->setupPanel()->localModelsButton()->click();
    QVERIFY2(w->document()->scalar("model.path").endsWith("models--org--base/snapshots/" + QString::fromStdString(kCommit)),
             qPrintable(w->document()->scalar("model.path")));
  }
};

TB_TEST(TestGetModel)
#include "test_get_model.moc"
