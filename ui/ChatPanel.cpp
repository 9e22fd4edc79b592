#include "ChatPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QThread>
#include <QVBoxLayout>

#include <chrono>
#include <map>
#include <set>

#include "ConfigDocument.h"
#include "RunHistory.h"
#include "checkpoint/checkpoint_files.h"
#include "components/builtin.h"
#include "config/interrupt.h"
#include "config/registry.h"
#include "config/schema.h"
#include "config/yaml_edit.h"
#include "export/checkpoint_config.h"
#include "hub/fetch_models.h"

namespace tb::ui {

using tb::inference::ChatFormat;
using tb::inference::ChatTurn;

// Lives with the worker thread; touched only there.
struct ChatPanel::Worker {
  std::map<std::string, std::unique_ptr<tb::inference::ChatSession>> sessions;  // by the config's YAML
};

namespace {

QString html(const QString& text) { return text.toHtmlEscaped().replace('\n', "<br>"); }

tb::config::Config loadedOrThrow(const tb::config::LoadResult& r) {
  if (!r.ok()) throw std::runtime_error(tb::config::format_diagnostics(r.diagnostics));
  tb::config::Config config = *r.config;
  config.root = YAML::Clone(config.root);  // the worker thread gets a tree of its own
  return config;
}

}  // namespace

ChatPanel::ChatPanel(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), doc_(document), worker_(std::make_shared<Worker>()),
      cancel_(std::make_shared<std::atomic<bool>>(false)) {
  buildUi();
  thread_ = new QThread(this);
  thread_->setObjectName("chat");
  threadContext_ = new QObject;
  threadContext_->moveToThread(thread_);
  thread_->start();
  connect(doc_, &ConfigDocument::changed, this, [this] {
    source_->setItemText(0, setupModelLabel());
    if (source_->currentData().toString().isEmpty()) {
      updateDefaults();
      resetTitles();
    }
  });
  // Checkpoints chosen by hand in an earlier session are offered again (those still on disk).
  for (const QString& path : QSettings().value("chat/checkpoints").toStringList())
    if (QFileInfo(QDir(path).filePath(tb::checkpoint::kManifestName)).isFile()) {
      source_->addItem(QFileInfo(path).fileName() + " — " + path, path);
      source_->setItemData(source_->count() - 1, true, Qt::UserRole + 1);
    }
  fillSources();
  resetTitles();
  updateDefaults();
  updateButtons();
}

ChatPanel::~ChatPanel() {
  cancel_->store(true);
  thread_->quit();
  thread_->wait();
  delete threadContext_;
}

void ChatPanel::buildUi() {
  source_ = new QComboBox(this);
  source_->setToolTip("The model to talk to: the setup's model (its weights as the config loads them) or a "
                      "checkpoint of the run");
  auto* browse = new QPushButton("Checkpoint folder…", this);
  browse->setToolTip("Talk to a checkpoint of another run (a folder with tunebench_checkpoint.json)");
  compare_ = new QCheckBox("Side by side with the base model", this);
  compare_->setToolTip("Send each prompt also to the model the checkpoint's run started from, to compare "
                       "base and fine-tuned answers");
  format_ = new QComboBox(this);
  format_->addItem("Chat template", int(ChatFormat::Template));
  format_->addItem("Alpaca instruction", int(ChatFormat::Alpaca));
  format_->addItem("Plain text", int(ChatFormat::Plain));
  format_->setToolTip("Chat template: the whole conversation through the tokenizer's conversation format (the "
                      "model's own chat template for a Hugging Face folder).\nAlpaca instruction: the last message "
                      "as the '### Instruction:' prompt alpaca_dataset trains on (no history).\nPlain text: the last "
                      "message continued as raw text (no history).");
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setRange(0, 2);
  temperature_->setSingleStep(0.1);
  temperature_->setValue(0.7);
  temperature_->setSpecialValueText("0 (greedy)");
  temperature_->setToolTip("0: always the most likely token (the same answer every time); higher: more varied");
  topK_ = new QSpinBox(this);
  topK_->setRange(0, 100000);
  topK_->setValue(40);
  topK_->setSpecialValueText("all");
  topK_->setToolTip("Sample only among the k most likely tokens (all: no limit)");
  maxTokens_ = new QSpinBox(this);
  maxTokens_->setRange(1, 32768);
  maxTokens_->setValue(256);
  maxTokens_->setToolTip("The longest reply, in tokens (also cut where the model's context ends)");
  system_ = new QLineEdit(this);
  system_->setPlaceholderText("optional system prompt (chat template only)");
  system_->setToolTip("A system message before the conversation; applies to the chat template format");

  for (int i = 0; i < 2; ++i) {
    panes_[i].title = new QLabel(this);
    panes_[i].title->setWordWrap(true);
    panes_[i].title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    panes_[i].view = new QTextBrowser(this);
    panes_[i].view->setOpenLinks(false);
  }
  slowNote_ = new QLabel("A run is training: replies share the CPU with it and will be slow.", this);
  slowNote_->setStyleSheet("color:#b26a00");
  slowNote_->setVisible(false);
  input_ = new QPlainTextEdit(this);
  input_->setPlaceholderText("Message (Ctrl+Enter sends)");
  input_->setMaximumHeight(90);
  send_ = new QPushButton("Send", this);
  send_->setToolTip("Send the message (Ctrl+Enter)");
  stop_ = new QPushButton("Stop", this);
  stop_->setToolTip("End the reply after its current token; it keeps what it has written");
  newChat_ = new QPushButton("New chat", this);
  newChat_->setToolTip("Forget the conversation (the loaded models stay loaded)");
  status_ = new QLabel(this);
  status_->setWordWrap(true);

  // Short rows: the tab fits beside the setup dock in a 1024-pixel-wide window.
  source_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  source_->setMinimumContentsLength(16);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel("Model", this));
  top->addWidget(source_, 1);
  top->addWidget(browse);
  auto* options = new QHBoxLayout;
  options->addWidget(compare_);
  options->addStretch(1);
  options->addWidget(new QLabel("Format", this));
  options->addWidget(format_);
  auto* settings = new QHBoxLayout;
  auto labeled = [&](const QString& label, QWidget* w) {
    settings->addWidget(new QLabel(label, this));
    settings->addWidget(w);
  };
  labeled("Temperature", temperature_);
  labeled("Top-k", topK_);
  labeled("Max tokens", maxTokens_);
  settings->addStretch(1);

  auto* splitter = new QSplitter(this);
  for (auto& pane : panes_) {
    auto* box = new QWidget(this);
    auto* l = new QVBoxLayout(box);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(pane.title);
    l->addWidget(pane.view, 1);
    splitter->addWidget(box);
  }
  panes_[1].view->parentWidget()->setVisible(false);

  auto* buttons = new QVBoxLayout;
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addWidget(newChat_);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(input_, 1);
  bottom->addLayout(buttons);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(options);
  layout->addLayout(settings);
  layout->addWidget(system_);
  layout->addWidget(splitter, 1);
  layout->addWidget(slowNote_);
  layout->addLayout(bottom);
  layout->addWidget(status_);

  connect(send_, &QPushButton::clicked, this, [this] {
    QString error;
    if (send(input_->toPlainText(), &error)) input_->clear();
  });
  auto* sendShortcut = new QShortcut(QKeySequence("Ctrl+Return"), input_);
  sendShortcut->setContext(Qt::WidgetShortcut);
  connect(sendShortcut, &QShortcut::activated, send_, &QPushButton::click);
  connect(stop_, &QPushButton::clicked, this, &ChatPanel::stop);
  connect(newChat_, &QPushButton::clicked, this, &ChatPanel::newChat);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "A checkpoint folder", outputDir_);
    QString error;
    if (!dir.isEmpty() && !chooseCheckpoint(dir, &error)) QMessageBox::warning(this, "Chat", error);
  });
  connect(source_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
    updateDefaults();
    updateButtons();
    resetTitles();
  });
  connect(format_, qOverload<int>(&QComboBox::activated), this, [this] { formatTouched_ = true; });
  connect(compare_, &QCheckBox::toggled, this, [this](bool on) {
    panes_[1].view->parentWidget()->setVisible(on);
    updateButtons();
  });
}

void ChatPanel::setOutputDir(const QString& dir) {
  outputDir_ = dir;
  fillSources();
}

void ChatPanel::setTrainingActive(bool active) { slowNote_->setVisible(active); }
bool ChatPanel::slowNoteVisible() const { return !slowNote_->isHidden(); }

// The setup's model first, then the complete checkpoints of the output folder (newest last), then folders
// chosen by hand; the choice survives a refill when it is still there.
void ChatPanel::fillSources() {
  const QString current = source_->currentData().toString();
  QStringList extra;
  for (int i = 0; i < source_->count(); ++i)
    if (source_->itemData(i, Qt::UserRole + 1).toBool()) extra << source_->itemData(i).toString();
  const QSignalBlocker block(source_);
  source_->clear();
  source_->addItem(setupModelLabel(), QString());
  QStringList listed;
  if (!outputDir_.isEmpty())
    for (const CheckpointEntry& e : scanCheckpoints(outputDir_)) {
      if (!e.complete) continue;
      const QString loss = e.hasLoss ? QString(", loss %1").arg(e.loss, 0, 'f', 4) : QString();
      source_->addItem(QString("%1 of %2 (%3%4)").arg(e.name, QDir(outputDir_).dirName(), e.recipe, loss), e.path);
      listed << e.path;
    }
  for (const QString& path : extra)
    if (!listed.contains(path)) {
      source_->addItem(QFileInfo(path).fileName() + " — " + path, path);
      source_->setItemData(source_->count() - 1, true, Qt::UserRole + 1);
    }
  const int index = source_->findData(current);
  source_->setCurrentIndex(index >= 0 ? index : 0);
  updateButtons();
}

// Until a message loads it, a pane names the model it will load, not the one a message loaded before.
void ChatPanel::resetTitles() {
  panes_[0].title->setText("Model: " + source_->currentText() + " (loads with the first message)");
  panes_[1].title->setText("Base: the model this checkpoint's run started from (loads with the first message)");
}

QString ChatPanel::setupModelLabel() const {
  return "The setup's model (" + doc_->modelBaseName() + ", weights as the config loads them)";
}

bool ChatPanel::chooseCheckpoint(const QString& path, QString* error) {
  const QString abs = QDir(path).absolutePath();
  try {
    loadedOrThrow(tb::exporting::load_checkpoint_config(abs.toStdString(), false));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  int index = source_->findData(abs);
  if (index < 0) {
    source_->addItem(QFileInfo(abs).fileName() + " — " + abs, abs);
    index = source_->count() - 1;
    source_->setItemData(index, true, Qt::UserRole + 1);
    QSettings settings;  // remembered for the next session
    QStringList chosen = settings.value("chat/checkpoints").toStringList();
    chosen.removeAll(abs);
    chosen.prepend(abs);
    settings.setValue("chat/checkpoints", chosen.mid(0, 12));
  }
  source_->setCurrentIndex(index);
  return true;
}

// A model folder with its own tokenizer talks through its chat template; a model trained on
// alpaca_dataset answers the Alpaca instruction; until the user picks a format. The setup's components
// come from the document (this runs on every setup edit), a checkpoint's from its manifest's config.
void ChatPanel::updateDefaults() {
  if (formatTouched_) return;
  std::string tokenizerComponent = doc_->scalar("tokenizer._component_").toStdString();
  std::string datasetComponent = doc_->scalar("dataset._component_").toStdString();
  if (!source_->currentData().toString().isEmpty()) {
    tb::config::Config config;
    QString ignored;
    if (!configFor(0, &config, &ignored)) return;
    const YAML::Node tokenizer = config.root["tokenizer"], dataset = config.root["dataset"];
    tokenizerComponent = tokenizer.IsMap() && tokenizer["_component_"] ? tokenizer["_component_"].as<std::string>() : "";
    datasetComponent = dataset.IsMap() && dataset["_component_"] ? dataset["_component_"].as<std::string>() : "";
  }
  ChatFormat format = ChatFormat::Template;
  if (tokenizerComponent != "tunebench.data.hf_tokenizer" && datasetComponent.find("alpaca") != std::string::npos)
    format = ChatFormat::Alpaca;
  format_->setCurrentIndex(format_->findData(int(format)));
}

void ChatPanel::updateButtons() {
  const bool checkpoint = !source_->currentData().toString().isEmpty();
  compare_->setEnabled(checkpoint && !busy_);
  if (!checkpoint && compare_->isChecked()) compare_->setChecked(false);
  send_->setEnabled(!busy_);
  stop_->setEnabled(busy_);
  newChat_->setEnabled(!busy_);
  source_->setEnabled(!busy_);
}

bool ChatPanel::configFor(int pane, tb::config::Config* config, QString* error) const {
  const QString source = source_->currentData().toString();
  try {
    if (source.isEmpty()) {
      // Only what loading a model needs must be right (as for export): a dataset still being chosen
      // does not keep the chat from the model.
      tb::config::LoadOptions options;
      options.recipe = tb::config::kExportVerb;
      options.registry = &tb::components::builtin();
      *config = loadedOrThrow(tb::config::load_text(doc_->text().toStdString(), doc_->displayName().toStdString(), options));
    } else if (pane == 0) {
      *config = loadedOrThrow(tb::exporting::load_checkpoint_config(source.toStdString(), false));
    } else {
      *config = loadedOrThrow(tb::exporting::load_checkpoint_base_config(source.toStdString()));
    }
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

bool ChatPanel::send(const QString& text, QString* error) {
  const QString message = text.trimmed();
  QString why;
  if (busy_) why = "a reply is still being written: Stop it or wait";
  else if (message.isEmpty()) why = "the message is empty";
  const int paneCount = compare_->isChecked() && compare_->isEnabled() ? 2 : 1;
  std::vector<Job> jobs;
  for (int p = 0; why.isEmpty() && p < paneCount; ++p) {
    Job job;
    job.pane = p;
    if (!configFor(p, &job.config, &why)) break;
    jobs.push_back(std::move(job));
  }
  if (!why.isEmpty()) {
    status_->setText("<span style='color:#c62828'>" + html(why) + "</span>");
    if (error) *error = why;
    return false;
  }
  tb::inference::ChatSettings settings;
  settings.format = ChatFormat(format_->currentData().toInt());
  settings.temperature = temperature_->value();
  settings.top_k = topK_->value();
  settings.max_new_tokens = maxTokens_->value();
  settings.seed = uint64_t(QDateTime::currentMSecsSinceEpoch());
  for (Job& job : jobs) {
    Pane& pane = panes_[job.pane];
    pane.error.clear();
    pane.turns.push_back({"user", message.toStdString()});
    if (settings.format == ChatFormat::Template && !system_->text().trimmed().isEmpty())
      job.turns.push_back({"system", system_->text().trimmed().toStdString()});
    job.turns.insert(job.turns.end(), pane.turns.begin(), pane.turns.end());
    render(job.pane);
  }
  runJobs(std::move(jobs), settings);
  return true;
}

// The jobs run one after the other on the worker thread (two models at once would only share the cores).
// A model stays loaded for the next message; one no longer asked for is freed.
void ChatPanel::runJobs(std::vector<Job> jobs, tb::inference::ChatSettings settings) {
  busy_ = true;
  pending_ = int(jobs.size());
  details_.clear();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  status_->setText("Loading the model…");
  updateButtons();
  auto worker = worker_;
  auto cancel = cancel_;
  QMetaObject::invokeMethod(threadContext_, [this, worker, cancel, jobs = std::move(jobs), settings] {
    std::set<std::string> used;
    for (const Job& job : jobs) {
      const int pane = job.pane;
      try {
        const std::string key = tb::config::yaml_flow(job.config.root);
        used.insert(key);
        auto& session = worker->sessions[key];
        if (!session) {
          // A model named by Hub repo id that the cache lacks comes down first (Stop ends it, the partial
          // file kept for the next try).
          const tb::config::InterruptScope stoppable(cancel.get());
          auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
          const auto start = std::chrono::steady_clock::now();
          tb::hub::fetch_missing_repos(job.config, [&](const tb::hub::MissingRepo& r, const tb::hub::DownloadProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200)) return;
            last = now;
            const QString text = "Fetching " + QString::fromStdString(r.repo_id + ": " +
                tb::hub::progress_text(p, std::chrono::duration<double>(now - start).count()));
            QMetaObject::invokeMethod(this, [this, text] { status_->setText(text); }, Qt::QueuedConnection);
          });
          session = std::make_unique<tb::inference::ChatSession>(job.config);
        }
        QString title = QString::fromStdString(session->weights());
        for (const auto& w : session->warnings()) title += "\nwarning: " + QString::fromStdString(w);
        QMetaObject::invokeMethod(this, [this, pane, title] {
          panes_[pane].title->setText((pane == 0 ? "Model: " : "Base: ") + title);
          status_->setText("Writing…");
        }, Qt::QueuedConnection);
        const auto reply = session->reply(job.turns, settings, [&](const std::string& so_far) {
          const QString text = QString::fromStdString(so_far);
          QMetaObject::invokeMethod(this, [this, pane, text] { onPartial(pane, text); }, Qt::QueuedConnection);
          return !cancel->load();
        });
        const double rate = reply.seconds > 0 ? double(reply.tokens.size()) / reply.seconds : 0;
        const QString detail = QString("%1 tokens (prompt %2) in %3 s, %4 tokens/s%5")
                                   .arg(reply.tokens.size())
                                   .arg(reply.prompt_tokens.size())
                                   .arg(reply.seconds, 0, 'f', 2)
                                   .arg(rate, 0, 'f', 1)
                                   .arg(reply.cancelled ? ", stopped" : reply.stopped_at_eos ? "" : ", at the token limit");
        const QString text = QString::fromStdString(reply.text);
        QMetaObject::invokeMethod(this, [this, pane, text, detail] { onReply(pane, true, text, detail); },
                                  Qt::QueuedConnection);
      } catch (const std::exception& e) {
        const QString why = QString::fromStdString(e.what());
        QMetaObject::invokeMethod(this, [this, pane, why] { onReply(pane, false, why, {}); }, Qt::QueuedConnection);
      }
    }
    for (auto it = worker->sessions.begin(); it != worker->sessions.end();)
      it = used.count(it->first) ? std::next(it) : worker->sessions.erase(it);
  }, Qt::QueuedConnection);
}

void ChatPanel::onPartial(int pane, const QString& text) {
  if (!busy_) return;
  panes_[pane].streaming = text;
  render(pane);
  Q_EMIT replyStreamed(pane, text);
}

void ChatPanel::onReply(int pane, bool ok, const QString& text, const QString& detail) {
  Pane& p = panes_[pane];
  p.streaming.clear();
  if (ok) {
    p.turns.push_back({"assistant", text.toStdString()});
    details_ << (compare_->isChecked() ? (pane == 0 ? "model: " : "base: ") : QString()) + detail;
  } else {
    // The message did not get an answer: it leaves the conversation, the reason stays on screen.
    if (!p.turns.empty() && p.turns.back().role == "user") p.turns.pop_back();
    p.error = text;
    details_ << "failed: " + text;
  }
  render(pane);
  if (--pending_ > 0) return;
  busy_ = false;
  status_->setText(html(details_.join("; ")));
  updateButtons();
  Q_EMIT repliesFinished();
}

void ChatPanel::stop() {
  if (busy_) cancel_->store(true);
}

void ChatPanel::newChat() {
  if (busy_) return;
  for (int i = 0; i < 2; ++i) {
    panes_[i].turns.clear();
    panes_[i].streaming.clear();
    panes_[i].error.clear();
    render(i);
  }
  status_->clear();
}

void ChatPanel::render(int pane) {
  const Pane& p = panes_[pane];
  QString out;
  for (const ChatTurn& t : p.turns)
    out += QString("<p><b>%1</b><br>%2</p>").arg(t.role == "user" ? "You" : "Model", html(QString::fromStdString(t.content)));
  if (!p.streaming.isEmpty()) out += "<p><b>Model</b><br>" + html(p.streaming) + " ▌</p>";
  if (!p.error.isEmpty()) out += "<p style='color:#c62828'>" + html(p.error) + "</p>";
  p.view->setHtml(out);
  p.view->verticalScrollBar()->setValue(p.view->verticalScrollBar()->maximum());
}

QString ChatPanel::paneText(int pane) const { return panes_[pane].view->toPlainText(); }
QString ChatPanel::paneTitle(int pane) const { return panes_[pane].title->text(); }
QString ChatPanel::statusText() const { return status_->text(); }

}  // namespace tb::ui
