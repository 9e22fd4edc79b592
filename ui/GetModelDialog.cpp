#include "GetModelDialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <QVBoxLayout>

#include "ModelInfo.h"
#include "checkpoint/hf_config.h"
#include "config/interrupt.h"
#include "hub/download.h"
#include "hub/fetch_models.h"

namespace tb::ui {

namespace {

// Models Tunebench trains whose weights fit a desktop, instruction-tuned where the family has one, with
// the engine's preset of each architecture (models/model_args.h): what the fit estimate reads before the
// repo's own config.json is asked for.
struct Suggestion {
  const char* repo;
  const char* preset;
};
const Suggestion kSuggested[] = {
    {"HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2_135m"}, {"HuggingFaceTB/SmolLM2-360M-Instruct", "smollm2_360m"},
    {"HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm2_1_7b"}, {"Qwen/Qwen3-0.6B", "qwen3_0_6b_instruct"},
    {"Qwen/Qwen3-1.7B", "qwen3_1_7b_instruct"},              {"Qwen/Qwen2.5-0.5B-Instruct", "qwen2_5_0_5b"},
    {"Qwen/Qwen2.5-1.5B-Instruct", "qwen2_5_1_5b_instruct"}, {"meta-llama/Llama-3.2-1B-Instruct", "llama3_2_1b"},
    {"meta-llama/Llama-3.2-3B-Instruct", "llama3_2_3b"},     {"google/gemma-3-1b-it", "gemma3_1b"},
    {"microsoft/Phi-4-mini-instruct", "phi4_mini"}};

}  // namespace

void GetModelDialog::JoinThread::operator()(QThread* thread) const {
  thread->wait();
  delete thread;
}

GetModelDialog::GetModelDialog(QWidget* parent)
    : QDialog(parent), repo_(new QComboBox(this)), revision_(new QLineEdit("main", this)), token_(new QLineEdit(this)),
      saveToken_(new QCheckBox("Save it for every Hugging Face tool on this computer", this)),
      progress_(new QProgressBar(this)), status_(new QLabel(this)), download_(new QPushButton("Check", this)),
      cancel_(new QPushButton("Cancel", this)) {
  setWindowTitle("Get a model from the Hugging Face Hub");
  repo_->setEditable(true);
  fillSuggestions();
  revision_->setToolTip("A branch, tag or commit");
  token_->setEchoMode(QLineEdit::Password);
  token_->setPlaceholderText("only for private or gated repos (default: HF_TOKEN, or huggingface-cli login's)");
  saveToken_->setToolTip(QString::fromStdString("Written to " + tb::hub::hf_home() + "/token (yours only), where "
                                                "huggingface_hub and transformers read it"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setText("Check asks the Hub for the download's size and what training the model would need; nothing is "
                   "fetched until you press Download. It downloads into the cache every Hugging Face tool shares; "
                   "files already there are not fetched again.");
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  cancel_->setEnabled(false);

  auto* form = new QFormLayout;
  form->addRow("Repo", repo_);
  form->addRow("Revision", revision_);
  form->addRow("Token", token_);
  form->addRow("", saveToken_);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(download_, QDialogButtonBox::ActionRole);
  buttons->addButton(cancel_, QDialogButtonBox::RejectRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addWidget(buttons);
  connect(download_, &QPushButton::clicked, this, [this] { checkedCurrent() ? startDownload() : check(); });
  const auto changed = [this] { download_->setText(checkedCurrent() ? "Download" : "Check"); };
  connect(repo_, &QComboBox::editTextChanged, this, changed);
  connect(revision_, &QLineEdit::textChanged, this, changed);
  connect(cancel_, &QPushButton::clicked, this, [this] { stop_.store(true); });
  connect(close, &QPushButton::clicked, this, &GetModelDialog::reject);
}

GetModelDialog::~GetModelDialog() { stop_.store(true); }  // the thread ends at its next piece; JoinThread waits

void GetModelDialog::reject() {
  if (running_) {
    stop_.store(true);
    closeWhenStopped_ = true;  // closes once the download has stopped
    return;
  }
  QDialog::reject();
}

void GetModelDialog::setFitEstimate(std::function<Fit(const tb::models::ModelArgs&)> estimate) {
  fitEstimate_ = std::move(estimate);
  fillSuggestions();
}

// The suggested models that fit (all of them until an estimate is set), each with its estimate as a tip.
void GetModelDialog::fillSuggestions() {
  const QString typed = repo_->currentText();
  repo_->clear();
  int left_out = 0;
  for (const auto& s : kSuggested) {
    const auto args = tb::models::preset_args(s.preset);
    const Fit fit = fitEstimate_ && args ? fitEstimate_(*args) : Fit{};
    if (!fit.fits) {
      ++left_out;
      continue;
    }
    repo_->addItem(QString::fromLatin1(s.repo));
    if (!fit.text.isEmpty()) repo_->setItemData(repo_->count() - 1, fit.text, Qt::ToolTipRole);
  }
  repo_->setToolTip(left_out == 0 ? QString("A repo id (org/name): one of these, or any model Tunebench can train")
                                  : QString("A repo id (org/name): one of these, or any model Tunebench can train (%1 more "
                                            "that Tunebench supports would not fit this computer as the run is set up)")
                                        .arg(left_out));
  if (!typed.isEmpty()) repo_->setEditText(typed);
}

QString GetModelDialog::currentKey() const {
  const QString revision = revision_->text().trimmed();
  return repo_->currentText().trimmed() + "@" + (revision.isEmpty() ? QString("main") : revision);
}

void GetModelDialog::setRunning(bool running) {
  running_ = running;
  if (running) stop_.store(false);
  download_->setEnabled(!running);
  cancel_->setEnabled(running);
}

// The options of a check and a download alike: the files Tunebench reads (as a fetch on demand takes them).
static tb::hub::DownloadOptions optionsOf(const QString& repo, const QString& revision, const QString& token) {
  tb::hub::DownloadOptions options;
  options.repo_id = repo.trimmed().toStdString();
  options.revision = revision.trimmed().isEmpty() ? "main" : revision.trimmed().toStdString();
  options.token = token.trimmed().toStdString();
  options.exclude = tb::hub::kFetchExclude;
  return options;
}

void GetModelDialog::check() {
  if (running_) return;
  const auto options = optionsOf(repo_->currentText(), revision_->text(), token_->text());
  const QString key = currentKey();
  setRunning(true);
  status_->setText("Asking the Hub what " + repo_->currentText().trimmed() + " holds…");
  QPointer<GetModelDialog> self(this);
  std::atomic<bool>* stop = &stop_;
  thread_.reset(QThread::create([self, options, stop, key] {
    const config::InterruptScope cancellable(stop);
    bool ok = false;
    QString message, configJson;
    qint64 toFetch = 0;
    try {
      const auto plan = tb::hub::plan_download(options);
      ok = true;
      toFetch = plan.bytes_to_fetch;
      configJson = QString::fromStdString(plan.config_json);
      message = QString("%1 at %2: %3 in %4 files, %5 of it to fetch.")
                    .arg(QString::fromStdString(options.repo_id), QString::fromStdString(plan.commit.substr(0, 7)),
                         formatBytes(double(plan.bytes)))
                    .arg(plan.files)
                    .arg(plan.bytes_to_fetch == 0 ? QString("none") : formatBytes(double(plan.bytes_to_fetch)));
    } catch (const config::Interrupted&) {
      message = "Cancelled.";
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(self, [self, ok, message, configJson, key, toFetch] {
      if (self) self->onChecked(ok, message, configJson, key, toFetch);
    }, Qt::QueuedConnection);
  }));
  thread_->start();
}

void GetModelDialog::onChecked(bool ok, const QString& message, const QString& configJson, const QString& key, qint64 toFetch) {
  setRunning(false);
  if (thread_) thread_->wait();
  QString text = message;
  if (ok) {
    // What training it would need, from its config.json, before its weights are fetched.
    if (configJson.isEmpty()) {
      text += "\nIt has no config.json: it is no model Tunebench trains.";
    } else {
      try {
        const auto args = tb::checkpoint::parse_hf_model_args(configJson.toStdString(),
                                                            repo_->currentText().trimmed().toStdString() + "/config.json");
        text += "\n" + describeArchitecture(args) + " · " + formatCount(args.parameter_count()) + " parameters";
        if (fitEstimate_) text += "\n" + fitEstimate_(args).text;
      } catch (const std::exception& e) {
        text += "\nTunebench cannot train it: " + QString::fromStdString(e.what());
      }
    }
    checkedKey_ = key;
    download_->setText(toFetch == 0 ? "Open" : "Download " + formatBytes(double(toFetch)));
  } else if (closeWhenStopped_) {
    QDialog::reject();
    return;
  }
  status_->setText(text);
  Q_EMIT checked(ok, text);
}

void GetModelDialog::startDownload() {
  if (running_) return;
  const auto options = optionsOf(repo_->currentText(), revision_->text(), token_->text());
  if (saveToken_->isChecked() && !options.token.empty()) try {
      tb::hub::save_token(options.token);
    } catch (const std::exception& e) {
      status_->setText("The token was not saved: " + QString::fromStdString(e.what()));
      Q_EMIT finished(false, status_->text());
      return;
    }
  setRunning(true);
  status_->setText("Asking the Hub for " + repo_->currentText().trimmed() + "…");
  QPointer<GetModelDialog> self(this);
  std::atomic<bool>* stop = &stop_;
  thread_.reset(QThread::create([self, options, stop] {
    const config::InterruptScope cancellable(stop);
    QElapsedTimer clock, shown;
    clock.start();
    shown.start();
    bool ok = false;
    QString message, folder;
    try {
      const auto result = tb::hub::download(options, [&](const tb::hub::DownloadProgress& p) {
        if (shown.elapsed() < 100 && p.bytes_done < p.bytes_total) return;
        shown.restart();
        const int permille = p.bytes_total > 0 ? int(p.bytes_done * 1000 / p.bytes_total) : 0;
        const QString line = QString::fromStdString(tb::hub::progress_text(p, double(clock.elapsed()) / 1000.0));
        QMetaObject::invokeMethod(self, [self, permille, line] {
          if (!self) return;
          self->progress_->setValue(permille);
          self->status_->setText(line);
        }, Qt::QueuedConnection);
      });
      ok = true;
      folder = QString::fromStdString(result.folder);
      message = QString("%1 is in %2").arg(QString::fromStdString(options.repo_id), folder);
    } catch (const config::Interrupted&) {
      message = "Cancelled: the part downloaded is kept, and the next download resumes it.";
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(self, [self, ok, message, folder] {
      if (self) self->onDone(ok, message, folder);
    }, Qt::QueuedConnection);
  }));
  thread_->start();
}

void GetModelDialog::onDone(bool ok, const QString& message, const QString& folder) {
  setRunning(false);
  if (thread_) thread_->wait();
  status_->setText(message);
  if (ok) {
    progress_->setValue(1000);
    folder_ = folder;
  }
  Q_EMIT finished(ok, message);
  if (ok) accept();
  else if (closeWhenStopped_) QDialog::reject();
}

}  // namespace tb::ui
