// "Export…" on the Checkpoints tab: a checkpoint as a GGUF file for llama.cpp, Ollama and LM Studio.
// The type, the destination, the adapter-only and Ollama options; the command line that does the same
// (tunebench-cli export gguf --checkpoint ...); progress while the export runs on a thread of its own,
// then the file's size. The dialog cannot be closed mid-export (the file is written atomically anyway).
#pragma once

#include <QDialog>
#include <QString>

#include <functional>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QThread;

namespace tb::ui {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  // `checkpoint`: a complete checkpoint folder; `isLora`: its recipe trains an adapter.
  ExportDialog(const QString& checkpoint, bool isLora, QWidget* parent = nullptr);
  ~ExportDialog() override;

  QComboBox* typeBox() const { return type_; }
  QLineEdit* destination() const { return destination_; }
  QCheckBox* adapterOnly() const { return adapterOnly_; }
  QCheckBox* ollama() const { return ollama_; }
  QLineEdit* commandLine() const { return command_; }
  QPushButton* exportButton() const { return export_; }
  QLabel* status() const { return status_; }
  bool running() const { return running_; }

  // Asked before replacing an existing file; true = replace. Default: a message box.
  void setReplaceConfirmation(std::function<bool(const QString& path)> confirm) { confirmReplace_ = std::move(confirm); }

  // The command that exports the same file with the same options.
  QString command() const;
  void startExport();

 Q_SIGNALS:
  void finished(bool ok, const QString& message);

 protected:
  void reject() override;  // not while exporting

 private:
  void updateCommand();
  void suggestDestination();
  void onProgress(int done, int total, qint64 bytes);
  void onDone(bool ok, const QString& message);

  QString checkpoint_;
  QComboBox* type_;
  QLineEdit* destination_;
  QCheckBox* adapterOnly_;
  QCheckBox* ollama_;
  QLineEdit* command_;
  QProgressBar* progress_;
  QLabel* status_;
  QPushButton* export_;
  QPushButton* close_;
  bool running_ = false;
  bool destinationEdited_ = false;
  std::function<bool(const QString&)> confirmReplace_;
  struct JoinThread {
    void operator()(QThread* thread) const;
  };
  std::unique_ptr<QThread, JoinThread> thread_;
};

}  // namespace tb::ui
