#include "GetModelDialog.h"

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

#include "config/interrupt.h"
#include "hub/download.h"

namespace tb::ui {

namespace {

// Models Tunebench trains whose weights fit a desktop: instruction-tuned where the family has one.
const char* const kSuggested[] = {
    "HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-360M-Instruct", "HuggingFaceTB/SmolLM2-1.7B-Instruct",
    "Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct", "google/gemma-3-1b-it",
    "microsoft/Phi-4-mini-instruct"};

}  // namespace

void GetModelDialog::JoinThread::operator()(QThread* thread) const {
  thread->wait();
  delete thread;
}

GetModelDialog::GetModelDialog(QWidget* parent)
    : QDialog(parent), repo_(new QComboBox(this)), revision_(new QLineEdit("main", this)), token_(new QLineEdit(this)),
      progress_(new QProgressBar(this)), status_(new QLabel(this)), download_(new QPushButton("Download", this)),
      cancel_(new QPushButton("Cancel", this)) {
  setWindowTitle("Get a model from the Hugging Face Hub");
  repo_->setEditable(true);
  for (const char* id : kSuggested) repo_->addItem(QString::fromLatin1(id));
  repo_->setToolTip("A repo id (org/name): one of these, or any model Tunebench can train");
  revision_->setToolTip("A branch, tag or commit");
  token_->setEchoMode(QLineEdit::Password);
  token_->setPlaceholderText("only for private or gated repos (default: HF_TOKEN, or huggingface-cli login's)");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setText("Downloads into the cache every Hugging Face tool shares; files already there are not fetched again.");
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  cancel_->setEnabled(false);

  auto* form = new QFormLayout;
  form->addRow("Repo", repo_);
  form->addRow("Revision", revision_);
  form->addRow("Token", token_);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(download_, QDialogButtonBox::ActionRole);
  buttons->addButton(cancel_, QDialogButtonBox::RejectRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addWidget(buttons);
  connect(download_, &QPushButton::clicked, this, &GetModelDialog::startDownload);
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

void GetModelDialog::startDownload() {
  if (running_) return;
  tb::hub::DownloadOptions options;
  options.repo_id = repo_->currentText().trimmed().toStdString();
  options.revision = revision_->text().trimmed().isEmpty() ? "main" : revision_->text().trimmed().toStdString();
  options.token = token_->text().trimmed().toStdString();
  running_ = true;
  stop_.store(false);
  download_->setEnabled(false);
  cancel_->setEnabled(true);
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
  running_ = false;
  if (thread_) thread_->wait();
  download_->setEnabled(true);
  cancel_->setEnabled(false);
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
