#include "HubDatasetDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QTextBrowser>
#include <QThread>
#include <QVBoxLayout>

#include <chrono>

#include "ModelInfo.h"
#include "components/hub_datasets.h"
#include "config/interrupt.h"
#include "data/hub_dataset_layout.h"

namespace tb::ui {

namespace {

constexpr int kShownRows = 5;

tb::components::HubDatasetRequest requestOf(const QString& repo, const QString& config, const QString& split) {
  tb::components::HubDatasetRequest r;
  r.repo = repo.trimmed().toStdString();
  r.config_name = config.trimmed().toStdString();
  // The first part of a split expression names the split whose files are looked at.
  const auto parts = tb::data::parse_split(split.trimmed().isEmpty() ? "train" : split.trimmed().toStdString()).parts;
  r.split = parts.empty() ? "train" : parts.front().split;
  return r;
}

}  // namespace

void HubDatasetDialog::JoinThread::operator()(QThread* thread) const {
  thread->wait();
  delete thread;
}

HubDatasetDialog::HubDatasetDialog(QWidget* parent)
    : QDialog(parent), repo_(new QLineEdit(this)), config_(new QComboBox(this)), split_(new QLineEdit("train", this)),
      check_(new QPushButton("Check", this)), rows_(new QPushButton("First rows", this)), stop_(new QPushButton("Stop", this)),
      use_(new QPushButton("Use", this)), status_(new QLabel(this)), shown_(new QTextBrowser(this)) {
  setWindowTitle("A dataset from the Hugging Face Hub");
  repo_->setPlaceholderText("org/name, e.g. yahma/alpaca-cleaned");
  config_->setEditable(true);
  config_->setToolTip("name: one of the dataset card's configs (empty: its default)");
  split_->setToolTip("split: a split, with Hugging Face's slicing (train[:95%], train[95%:], train[:1000])");
  rows_->setToolTip("Downloads the split's files into the shared Hugging Face cache and shows its first rows");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* form = new QFormLayout;
  form->addRow("Repo", repo_);
  form->addRow("Config", config_);
  form->addRow("Split", split_);
  auto* actions = new QHBoxLayout;
  for (auto* b : {check_, rows_, stop_}) actions->addWidget(b);
  actions->addStretch();
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(use_, QDialogButtonBox::AcceptRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(actions);
  layout->addWidget(status_);
  layout->addWidget(shown_, 1);
  layout->addWidget(buttons);
  resize(720, 520);
  connect(check_, &QPushButton::clicked, this, &HubDatasetDialog::check);
  connect(rows_, &QPushButton::clicked, this, &HubDatasetDialog::showFirstRows);
  connect(stop_, &QPushButton::clicked, this, [this] { stopFlag_ = true; });
  connect(use_, &QPushButton::clicked, this, &QDialog::accept);
  connect(close, &QPushButton::clicked, this, &HubDatasetDialog::reject);
  connect(repo_, &QLineEdit::returnPressed, this, &HubDatasetDialog::check);
  // Use takes what First rows read: any change asks for it again.
  const auto stale = [this] { use_->setEnabled(false); };
  connect(repo_, &QLineEdit::textChanged, this, stale);
  connect(split_, &QLineEdit::textChanged, this, stale);
  connect(config_, &QComboBox::currentTextChanged, this, stale);
  setBusy(false);
  use_->setEnabled(false);
}

HubDatasetDialog::~HubDatasetDialog() { stopFlag_ = true; }

QString HubDatasetDialog::repo() const { return repo_->text().trimmed(); }
QString HubDatasetDialog::configName() const { return config_->currentText().trimmed(); }
QString HubDatasetDialog::split() const { return split_->text().trimmed().isEmpty() ? "train" : split_->text().trimmed(); }

void HubDatasetDialog::setBusy(bool busy) {
  check_->setEnabled(!busy);
  rows_->setEnabled(!busy);
  stop_->setEnabled(busy);
}

void HubDatasetDialog::start(std::function<void()> work) {
  if (thread_ || repo().isEmpty()) return;
  stopFlag_ = false;
  setBusy(true);
  std::atomic<bool>* stop = &stopFlag_;
  thread_.reset(QThread::create([work = std::move(work), stop] {
    const config::InterruptScope stoppable(stop);
    work();
  }));
  thread_->start();
}

void HubDatasetDialog::finish() {
  thread_.reset();  // joined: its last act was to post this
  setBusy(false);
}

void HubDatasetDialog::check() {
  const auto request = requestOf(repo(), configName(), split());
  status_->setText("Asking the Hub what " + repo() + " holds…");
  QPointer<HubDatasetDialog> self(this);
  start([self, request] {
    bool ok = false;
    QString text;
    QStringList configs;
    try {
      const auto info = tb::components::inspect_hub_dataset(request);
      ok = true;
      for (const auto& c : info.configs) configs << QString::fromStdString(c);
      QStringList splits;
      for (const auto& s : info.splits) splits << QString::fromStdString(s);
      text = QString("%1 at %2%3: splits %4. Split %5: %6 file(s), %7 (%8 to download).")
                 .arg(QString::fromStdString(request.repo), QString::fromStdString(info.commit.substr(0, 7)),
                      info.converted ? " (its Parquet copy: a loading-script dataset)" : "", splits.join(", "),
                      QString::fromStdString(request.split))
                 .arg(info.files.size())
                 .arg(formatBytes(double(info.bytes)),
                      info.bytes_to_fetch == 0 ? QString("nothing") : formatBytes(double(info.bytes_to_fetch)));
      if (!configs.isEmpty()) text += " Configs: " + configs.join(", ") + ".";
    } catch (const config::Interrupted&) {
      text = "Stopped.";
    } catch (const std::exception& e) {
      text = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(self, [self, ok, text, configs] {
      if (!self) return;
      self->finish();
      self->status_->setText(text);
      if (ok && !configs.isEmpty()) {
        const QString current = self->config_->currentText();
        self->config_->clear();
        self->config_->addItems(configs);
        self->config_->setCurrentText(current.isEmpty() ? configs.front() : current);
      }
      Q_EMIT self->checked(ok);
    }, Qt::QueuedConnection);
  });
}

void HubDatasetDialog::showFirstRows() {
  const auto request = requestOf(repo(), configName(), split());
  status_->setText("Fetching the files of " + QString::fromStdString(request.split) + "…");
  shown_->clear();
  QPointer<HubDatasetDialog> self(this);
  start([self, request] {
    bool ok = false;
    QString text, html;
    // The download's progress, a few times a second at most.
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    const auto start = std::chrono::steady_clock::now();
    const auto progress = [&](const std::string&, const tb::hub::DownloadProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(250)) return;
      last = now;
      const QString line = QString::fromStdString(
          tb::hub::progress_text(p, std::chrono::duration<double>(now - start).count()));
      QMetaObject::invokeMethod(self, [self, line] {
        if (self) self->status_->setText("Fetching: " + line);
      }, Qt::QueuedConnection);
    };
    tb::data::Row first;
    try {
      const auto rows = tb::components::open_hub_dataset(request, std::nullopt, {}, progress);
      int n = 0;
      for (tb::data::Row row; n < kShownRows && rows->next(row); ++n) {
        if (n == 0) first = row;
        const std::string value = row.error.empty() ? row.value.dump(2) : "(this row cannot be read: " + row.error + ")";
        html += "<p><b>" + QString::fromStdString(row.file + ":" + std::to_string(row.line)).toHtmlEscaped() + "</b></p><pre>" +
                QString::fromStdString(value.substr(0, 4000)).toHtmlEscaped() + "</pre>";
      }
      ok = n > 0;
      text = QString("The first %1 row(s) of %2, as the dataset reads them.").arg(n).arg(QString::fromStdString(request.split));
    } catch (const config::Interrupted&) {
      text = "Stopped (what was fetched is kept: the next try resumes it).";
    } catch (const std::exception& e) {
      text = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(self, [self, ok, text, html, first] {
      if (!self) return;
      self->finish();
      self->status_->setText(text);
      self->shown_->setHtml(html);
      self->firstRow_ = first;
      self->use_->setEnabled(ok);
      Q_EMIT self->rowsShown(ok);
    }, Qt::QueuedConnection);
  });
}

void HubDatasetDialog::reject() {
  if (thread_) {
    stopFlag_ = true;  // the work ends at its next check; the dialog closes after it
    thread_.reset();
    setBusy(false);
  }
  QDialog::reject();
}

}  // namespace tb::ui
