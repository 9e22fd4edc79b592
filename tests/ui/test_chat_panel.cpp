// The Chat tab on the bundled base model and a real checkpoint (two training steps of the embedded
// default, by the CLI): typed messages go through the worker thread and stream back; the reply is the one
// a ChatSession gives for the same conversation (the panel passes the turns and settings through; the
// decoding itself is checked against the reference in test_eval_generate); Stop ends a reply keeping what
// it wrote; side by side answers from the checkpoint and from the model its run started from; a message
// that does not fit leaves the conversation as it was, with the reason on screen.
#include <QtTest>

#include "test_main.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>

#include "ChatPanel.h"
#include "ConfigDocument.h"
#include "export/checkpoint_config.h"
#include "inference/chat_session.h"
#include "test_support.h"

using tb::inference::ChatFormat;
using tb::inference::ChatTurn;

namespace {

constexpr int kReplyTimeoutMs = 120000;

// What a ChatSession answers, greedy, for this conversation: the panel's reply must be the same.
std::string directReply(const tb::config::LoadResult& loaded, const std::vector<ChatTurn>& turns, ChatFormat format,
                        int maxTokens) {
  if (!loaded.ok()) throw std::runtime_error(tb::config::format_diagnostics(loaded.diagnostics));
  tb::inference::ChatSession session(*loaded.config);
  tb::inference::ChatSettings settings;
  settings.format = format;
  settings.temperature = 0;
  settings.max_new_tokens = maxTokens;
  return session.reply(turns, settings).text;
}

void sendTyped(tb::ui::ChatPanel& panel, const QString& text) {
  panel.inputEdit()->setFocus();
  QTest::keyClicks(panel.inputEdit(), text);
  QTest::mouseClick(panel.sendButton(), Qt::LeftButton);
}

}  // namespace

class TestChatPanel : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_ = qEnvironmentVariable("TB_CLI");
  QString run_;

  void greedy(tb::ui::ChatPanel& panel, int maxTokens) {
    panel.temperatureBox()->setValue(0);
    panel.maxTokensBox()->setValue(maxTokens);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!cli_.isEmpty(), "TB_CLI is not set (ctest sets it)");
    QDir::setCurrent(TB_SOURCE_DIR);
    run_ = dir_.path() + "/run";
    const auto r = tbtest::run_process(cli_, {"run", "full_finetune_single_device", "--config", "tiny/full_single_device",
                                              "output_dir=" + run_, "epochs=1", "max_steps_per_epoch=2",
                                              "batch_size=4", "num_threads=1", "optimizer.lr=0.02"});
    QVERIFY2(r.code == 0, qPrintable(r.err.right(2000)));
  }

  // The embedded default trains on Alpaca instructions with a SentencePiece tokenizer (no chat template):
  // the tab asks it the way it was trained.
  void talksToTheSetupModel() {
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadBundled("tiny/full_single_device"));
    tb::ui::ChatPanel panel(&doc);
    QCOMPARE(ChatFormat(panel.formatBox()->currentData().toInt()), ChatFormat::Alpaca);
    QVERIFY(!panel.compareBox()->isEnabled());  // no checkpoint chosen: nothing to compare with
    greedy(panel, 12);
    QSignalSpy streamed(&panel, &tb::ui::ChatPanel::replyStreamed);
    QSignalSpy finished(&panel, &tb::ui::ChatPanel::repliesFinished);
    sendTyped(panel, "What is the capital of France?");
    QVERIFY(panel.isBusy());
    QVERIFY(!panel.sendButton()->isEnabled() && panel.stopButton()->isEnabled());
    QVERIFY(finished.wait(kReplyTimeoutMs));
    QVERIFY2(!panel.isBusy(), qPrintable(panel.statusText()));
    QVERIFY(panel.inputEdit()->toPlainText().isEmpty());
    const auto& turns = panel.conversation(0);
    QCOMPARE(int(turns.size()), 2);
    QCOMPARE(QString::fromStdString(turns[0].content), QString("What is the capital of France?"));
    const std::string want = directReply(doc.validate(), {turns[0]}, ChatFormat::Alpaca, 12);
    QCOMPARE(QString::fromStdString(turns[1].content), QString::fromStdString(want));
    QVERIFY2(!want.empty(), "the model answered nothing: the comparison above proves little");
    QVERIFY(streamed.size() >= 1);
    QCOMPARE(streamed.last().at(1).toString(), QString::fromStdString(want));
    QVERIFY(panel.paneText(0).contains("What is the capital of France?"));
    QVERIFY2(panel.paneTitle(0).contains("base_model"), qPrintable(panel.paneTitle(0)));
    QVERIFY2(panel.statusText().contains("tokens/s"), qPrintable(panel.statusText()));

    // The second message carries the first exchange along (chat template format: the whole conversation).
    panel.formatBox()->setCurrentIndex(panel.formatBox()->findData(int(ChatFormat::Template)));
    sendTyped(panel, "And of Spain?");
    QVERIFY(finished.wait(kReplyTimeoutMs));
    QCOMPARE(int(panel.conversation(0).size()), 4);
    const std::vector<ChatTurn> history(panel.conversation(0).begin(), panel.conversation(0).begin() + 3);
    QCOMPARE(panel.conversation(0)[3].content, directReply(doc.validate(), history, ChatFormat::Template, 12));

    panel.newChat();
    QVERIFY(panel.conversation(0).empty());
    QVERIFY(!panel.paneText(0).contains("France"));
  }

  void stopEndsTheReplyKeepingWhatItWrote() {
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadBundled("tiny/full_single_device"));
    tb::ui::ChatPanel panel(&doc);
    panel.formatBox()->setCurrentIndex(panel.formatBox()->findData(int(ChatFormat::Plain)));
    panel.temperatureBox()->setValue(1.0);
    panel.topKBox()->setValue(0);
    panel.maxTokensBox()->setValue(200);  // the model reads 256: room for all of it
    QSignalSpy finished(&panel, &tb::ui::ChatPanel::repliesFinished);
    connect(&panel, &tb::ui::ChatPanel::replyStreamed, &panel, [&panel] { QTest::mouseClick(panel.stopButton(), Qt::LeftButton); });
    sendTyped(panel, "Once upon a time");
    QVERIFY(finished.wait(kReplyTimeoutMs));
    QCOMPARE(int(panel.conversation(0).size()), 2);
    QVERIFY2(panel.statusText().contains("stopped"), qPrintable(panel.statusText()));
    QVERIFY(!panel.conversation(0)[1].content.empty());
    QVERIFY(panel.sendButton()->isEnabled());
  }

  void sideBySideWithTheBaseModel() {
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadBundled("tiny/full_single_device"));
    tb::ui::ChatPanel panel(&doc);
    panel.setOutputDir(run_);
    QCOMPARE(panel.sourceBox()->count(), 2);  // the setup's model and the run's one checkpoint
    panel.sourceBox()->setCurrentIndex(1);
    const QString checkpoint = panel.sourceBox()->currentData().toString();
    QVERIFY2(checkpoint.endsWith("epoch_0"), qPrintable(checkpoint));
    QVERIFY(panel.compareBox()->isEnabled());
    panel.compareBox()->setChecked(true);
    greedy(panel, 10);
    QSignalSpy finished(&panel, &tb::ui::ChatPanel::repliesFinished);
    sendTyped(panel, "Reverse the word: cat");
    QVERIFY(finished.wait(kReplyTimeoutMs));
    QCOMPARE(finished.size(), 1);  // once, when both panes are done
    QCOMPARE(int(panel.conversation(0).size()), 2);
    QCOMPARE(int(panel.conversation(1).size()), 2);
    QVERIFY2(panel.paneTitle(0).contains(checkpoint), qPrintable(panel.paneTitle(0)));
    QVERIFY2(panel.paneTitle(1).contains("base_model") && !panel.paneTitle(1).contains(checkpoint),
             qPrintable(panel.paneTitle(1)));
    const std::vector<ChatTurn> question{panel.conversation(0)[0]};
    QCOMPARE(panel.conversation(0)[1].content,
             directReply(tb::exporting::load_checkpoint_config(checkpoint.toStdString(), false), question,
                         ChatFormat::Alpaca, 10));
    QCOMPARE(panel.conversation(1)[1].content,
             directReply(tb::exporting::load_checkpoint_base_config(checkpoint.toStdString()), question,
                         ChatFormat::Alpaca, 10));
  }

  void aMessageThatDoesNotFitSaysSo() {
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadBundled("tiny/full_single_device"));
    tb::ui::ChatPanel panel(&doc);
    panel.formatBox()->setCurrentIndex(panel.formatBox()->findData(int(ChatFormat::Template)));
    QSignalSpy finished(&panel, &tb::ui::ChatPanel::repliesFinished);
    QString error;
    QVERIFY(!panel.send("   ", &error));
    QVERIFY(error.contains("empty"));
    QVERIFY(panel.send(QString("word ").repeated(400), &error));
    QVERIFY(finished.wait(kReplyTimeoutMs));
    QVERIFY(panel.conversation(0).empty());
    QVERIFY2(panel.paneText(0).contains("max_seq_len"), qPrintable(panel.paneText(0)));
    QVERIFY(panel.sendButton()->isEnabled());
  }

  void saysRepliesAreSlowWhileARunTrains() {
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadBundled("tiny/full_single_device"));
    tb::ui::ChatPanel panel(&doc);
    QVERIFY(!panel.slowNoteVisible());
    panel.setTrainingActive(true);
    QVERIFY(panel.slowNoteVisible());
    panel.setTrainingActive(false);
    QVERIFY(!panel.slowNoteVisible());
  }
};

TB_TEST(TestChatPanel)
#include "test_chat_panel.moc"
