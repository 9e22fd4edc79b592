// "Get model…" on the Setup tab: a Hugging Face Hub repo id (or one of the models Tunebench supports)
// downloaded into the cache every Hugging Face tool shares, on a thread of its own, with progress (bytes,
// speed, time left) and Cancel (the partial file is kept: the next download resumes it). A private or
// gated repo says what to do and takes a token. On success, folder() is the model's snapshot folder.
#pragma once

#include <QDialog>
#include <QString>

#include <atomic>
#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QThread;

namespace tb::ui {

class GetModelDialog : public QDialog {
  Q_OBJECT
 public:
  explicit GetModelDialog(QWidget* parent = nullptr);
  ~GetModelDialog() override;

  QComboBox* repoBox() const { return repo_; }  // editable: any repo id
  QLineEdit* tokenField() const { return token_; }
  QPushButton* downloadButton() const { return download_; }
  QPushButton* cancelButton() const { return cancel_; }
  QLabel* status() const { return status_; }
  bool running() const { return running_; }
  QString folder() const { return folder_; }

  void startDownload();

 Q_SIGNALS:
  void finished(bool ok, const QString& message);

 protected:
  void reject() override;  // while downloading: Cancel first

 private:
  void onDone(bool ok, const QString& message, const QString& folder);

  QComboBox* repo_;
  QLineEdit* revision_;
  QLineEdit* token_;
  QProgressBar* progress_;
  QLabel* status_;
  QPushButton* download_;
  QPushButton* cancel_;
  bool running_ = false;
  bool closeWhenStopped_ = false;
  QString folder_;
  std::atomic<bool> stop_{false};
  struct JoinThread {
    void operator()(QThread* thread) const;
  };
  std::unique_ptr<QThread, JoinThread> thread_;
};

}  // namespace tb::ui
