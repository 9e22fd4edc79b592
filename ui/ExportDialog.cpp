#include "ExportDialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QThread>
#include <QVBoxLayout>

#include "ModelInfo.h"
#include "export/checkpoint_config.h"
#include "export/gguf_export.h"
#include "export/gguf_layout.h"

namespace tb::ui {

void ExportDialog::JoinThread::operator()(QThread* thread) const {
  thread->wait();
  delete thread;
}

ExportDialog::ExportDialog(const QString& checkpoint, bool isLora, QWidget* parent)
    : QDialog(parent), checkpoint_(checkpoint), type_(new QComboBox(this)), destination_(new QLineEdit(this)),
      adapterOnly_(new QCheckBox("LoRA adapter only (llama.cpp applies it on the base model's GGUF)", this)),
      ollama_(new QCheckBox("Also write an Ollama Modelfile beside it", this)), command_(new QLineEdit(this)),
      progress_(new QProgressBar(this)), status_(new QLabel(this)), export_(new QPushButton("Export", this)),
      close_(new QPushButton("Close", this)) {
  setWindowTitle("Export " + QFileInfo(checkpoint).fileName() + " as GGUF");
  for (const auto& t : tb::exporting::file_types()) type_->addItem(QString::fromLatin1(t.name));
  // The type chosen last time (remembered), else q4_k_m.
  type_->setCurrentText(QSettings().value("export/type", "q4_k_m").toString());
  type_->setToolTip("f32/f16/bf16: unquantized; q8_0 ~1.06 bytes/weight; q6_k, q5_k_m, q4_k_m, q4_0: smaller, "
                    "a little less exact (llama.cpp's own mixes)");
  adapterOnly_->setEnabled(isLora);
  command_->setReadOnly(true);
  command_->setObjectName("exportCommand");
  export_->setObjectName("exportStart");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  auto* browse = new QPushButton("Browse…", this);

  auto* where = new QHBoxLayout;
  where->addWidget(destination_, 1);
  where->addWidget(browse);
  auto* form = new QFormLayout;
  form->addRow("Format", new QLabel("GGUF (llama.cpp, Ollama, LM Studio)", this));
  form->addRow("Type", type_);
  form->addRow("Destination", where);
  form->addRow("", adapterOnly_);
  form->addRow("", ollama_);
  form->addRow("Command line", command_);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(export_);
  buttons->addWidget(close_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addLayout(buttons);
  resize(720, sizeHint().height());

  suggestDestination();
  connect(type_, &QComboBox::currentTextChanged, this, [this](const QString& type) {
    QSettings().setValue("export/type", type);
    suggestDestination();
  });
  connect(adapterOnly_, &QCheckBox::toggled, this, [this](bool on) {
    if (on) {
      ollama_->setChecked(false);
      if (tb::exporting::file_type(type_->currentText().toStdString()).base != tb::quant::GgmlType::Q8_0 &&
          type_->currentText().startsWith('q'))
        type_->setCurrentText("f16");  // llama.cpp reads adapters in f32, f16, bf16 or q8_0
    }
    ollama_->setEnabled(!on);
    suggestDestination();
  });
  connect(ollama_, &QCheckBox::toggled, this, &ExportDialog::updateCommand);
  connect(destination_, &QLineEdit::textEdited, this, [this] {
    destinationEdited_ = true;
    updateCommand();
  });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, "Export to", destination_->text(), "GGUF (*.gguf)");
    if (file.isEmpty()) return;
    destination_->setText(file);
    destinationEdited_ = true;
    updateCommand();
  });
  connect(export_, &QPushButton::clicked, this, &ExportDialog::startExport);
  connect(close_, &QPushButton::clicked, this, &ExportDialog::reject);
}

ExportDialog::~ExportDialog() = default;  // JoinThread waits for a running export

// <run folder>/<run>-<checkpoint>-<type>.gguf, until the user picks a file of their own.
void ExportDialog::suggestDestination() {
  if (!destinationEdited_) {
    const QFileInfo ck(checkpoint_);
    const QString run = QFileInfo(ck.absolutePath()).fileName();
    const QString suffix = adapterOnly_->isChecked() ? "-lora-" : "-";
    destination_->setText(QDir(ck.absolutePath()).filePath(run + "-" + ck.fileName() + suffix + type_->currentText() + ".gguf"));
  }
  // A long path shows its end (the file's name); the whole of it is in the tooltip.
  destination_->setCursorPosition(int(destination_->text().size()));
  destination_->setToolTip(destination_->text());
  updateCommand();
}

QString ExportDialog::command() const {
  const auto quote = [](const QString& s) {
    return s.contains(QRegularExpression("[^A-Za-z0-9_./=:+-]")) ? "'" + QString(s).replace("'", "'\\''") + "'" : s;
  };
  QString cmd = "tunebench-cli export gguf --checkpoint " + quote(checkpoint_) + " --output " +
                quote(destination_->text()) + " --type " + type_->currentText();
  if (adapterOnly_->isChecked()) cmd += " --adapter";
  if (ollama_->isChecked() && ollama_->isEnabled()) cmd += " --ollama";
  return cmd;
}

void ExportDialog::updateCommand() {
  command_->setText(command());
  command_->setToolTip(command_->text());
}

void ExportDialog::startExport() {
  if (running_) return;
  tb::exporting::GgufExportOptions options;
  options.output = destination_->text().toStdString();
  // An existing file is replaced only when the user says so (the engine refuses it otherwise).
  if (QFileInfo::exists(destination_->text()) && QFileInfo(destination_->text()).isFile()) {
    const QString question = destination_->text() + " exists. Replace it?";
    const bool replace = confirmReplace_ ? confirmReplace_(destination_->text())
                                         : QMessageBox::question(this, "Export", question) == QMessageBox::Yes;
    if (!replace) {
      status_->setText("Not exported: " + destination_->text() + " exists (choose another file, or replace it)");
      return;
    }
    options.overwrite = true;
  }
  options.type = type_->currentText().toStdString();
  options.adapter = adapterOnly_->isChecked();
  options.ollama = ollama_->isChecked() && ollama_->isEnabled();
  const std::string checkpoint = checkpoint_.toStdString();
  running_ = true;
  export_->setEnabled(false);
  close_->setEnabled(false);
  progress_->setRange(0, 0);  // busy until the first tensor is written (loading the model)
  status_->setText("Loading the checkpoint…");
  QPointer<ExportDialog> self(this);
  thread_.reset(QThread::create([self, options, checkpoint] {
    bool ok = false;
    QString message;
    try {
      const auto loaded = tb::exporting::load_checkpoint_config(checkpoint, options.adapter);
      if (!loaded.ok()) throw std::runtime_error(tb::config::format_diagnostics(loaded.diagnostics));
      const auto result = tb::exporting::export_gguf(*loaded.config, options, [self](size_t done, size_t total, uint64_t bytes) {
        QMetaObject::invokeMethod(self, [self, done, total, bytes] {
          if (self) self->onProgress(int(done), int(total), qint64(bytes));
        }, Qt::QueuedConnection);
      });
      ok = true;
      message = QString("Wrote %1: %2 (%3 bytes per parameter) in %4 s")
                    .arg(QString::fromStdString(result.path), formatBytes(double(result.bytes)))
                    .arg(double(result.bytes) / double(std::max<int64_t>(1, result.parameters)), 0, 'f', 3)
                    .arg(result.seconds, 0, 'f', 1);
      if (!result.modelfile.empty()) message += "\nand " + QString::fromStdString(result.modelfile);
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(self, [self, ok, message] {
      if (self) self->onDone(ok, message);
    }, Qt::QueuedConnection);
  }));
  thread_->start();
}

void ExportDialog::onProgress(int done, int total, qint64 bytes) {
  progress_->setRange(0, total);
  progress_->setValue(done);
  status_->setText(QString("%1 of %2 tensors, %3 written").arg(done).arg(total).arg(formatBytes(double(bytes))));
}

void ExportDialog::onDone(bool ok, const QString& message) {
  running_ = false;
  if (thread_) thread_->wait();
  export_->setEnabled(true);
  close_->setEnabled(true);
  progress_->setRange(0, 1);
  progress_->setValue(ok ? 1 : 0);
  status_->setText(ok ? message : "Export failed: " + message);
  Q_EMIT finished(ok, message);
}

void ExportDialog::reject() {
  if (!running_) QDialog::reject();
}

}  // namespace tb::ui
