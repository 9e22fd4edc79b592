// The Chat tab: talk to the setup's model or one of the run's checkpoints, through the model's chat
// template (or the Alpaca instruction a model trained on alpaca_dataset answers, or plain continuation),
// with tokens streamed from a worker thread that keeps the loaded models; temperature, top-k, max tokens,
// a system prompt and Stop; "side by side with the base model" sends the same prompt to the checkpoint
// and to the model its run started from. It works while no run trains and says so when one does (the two
// share the CPU).
#pragma once

#include <QString>
#include <QWidget>

#include <atomic>
#include <memory>
#include <vector>

#include "inference/chat_session.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QThread;

namespace tb::ui {

class ConfigDocument;

class ChatPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ChatPanel(ConfigDocument* document, QWidget* parent = nullptr);
  ~ChatPanel() override;  // stops a reply in flight and joins the worker

  // The checkpoints of this output folder become choices beside the setup's model.
  void setOutputDir(const QString& dir);
  void setTrainingActive(bool active);
  // Chooses the checkpoint folder as the model (adding it to the choices); false when it is not one.
  bool chooseCheckpoint(const QString& path, QString* error = nullptr);

  // What Send does: the text as the next user turn, answered in each pane; false (with the reason, also
  // shown) when it cannot start.
  bool send(const QString& text, QString* error = nullptr);
  void stop();     // ends the replies in flight after their current token (they keep what they have)
  void newChat();  // forgets the conversations
  bool isBusy() const { return busy_; }

  // The conversation of a pane (0: the chosen model, 1: the base beside it), finished turns only.
  const std::vector<tb::inference::ChatTurn>& conversation(int pane) const { return panes_[pane].turns; }
  QString paneText(int pane) const;
  QString paneTitle(int pane) const;
  QString statusText() const;
  bool slowNoteVisible() const;

  QComboBox* sourceBox() const { return source_; }
  QCheckBox* compareBox() const { return compare_; }
  QComboBox* formatBox() const { return format_; }
  QDoubleSpinBox* temperatureBox() const { return temperature_; }
  QSpinBox* topKBox() const { return topK_; }
  QSpinBox* maxTokensBox() const { return maxTokens_; }
  QLineEdit* systemEdit() const { return system_; }
  QPlainTextEdit* inputEdit() const { return input_; }
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }

 Q_SIGNALS:
  void replyStreamed(int pane, const QString& textSoFar);
  void repliesFinished();  // every pane of the last Send is done (answered, stopped or failed)

 private:
  struct Pane {
    QLabel* title = nullptr;
    QTextBrowser* view = nullptr;
    std::vector<tb::inference::ChatTurn> turns;
    QString streaming;  // the reply being written
    QString error;
  };
  struct Job {
    int pane = 0;
    tb::config::Config config;
    std::vector<tb::inference::ChatTurn> turns;
  };

  void buildUi();
  void fillSources();
  void resetTitles();
  QString setupModelLabel() const;
  void updateDefaults();
  void updateButtons();
  void render(int pane);
  // The config of pane 0's model (the chosen source) or pane 1's (the model that source started from).
  bool configFor(int pane, tb::config::Config* config, QString* error) const;
  void runJobs(std::vector<Job> jobs, tb::inference::ChatSettings settings);
  void onPartial(int pane, const QString& text);
  void onReply(int pane, bool ok, const QString& text, const QString& detail);

  ConfigDocument* doc_;
  QComboBox* source_;
  QCheckBox* compare_;
  QComboBox* format_;
  QDoubleSpinBox* temperature_;
  QSpinBox* topK_;
  QSpinBox* maxTokens_;
  QLineEdit* system_;
  QPlainTextEdit* input_;
  QPushButton* send_;
  QPushButton* stop_;
  QPushButton* newChat_;
  QLabel* status_;
  QLabel* slowNote_;
  Pane panes_[2];
  QString outputDir_;
  bool formatTouched_ = false;
  bool busy_ = false;
  int pending_ = 0;
  QStringList details_;

  struct Worker;  // the thread's side: the loaded models, keyed by their config
  std::shared_ptr<Worker> worker_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QThread* thread_ = nullptr;
  QObject* threadContext_ = nullptr;  // lives on thread_: work is queued to it
};

}  // namespace tb::ui
