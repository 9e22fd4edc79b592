// "Get model…" on the Setup tab: a Hugging Face Hub repo id (or one of the models Tunebench supports)
// downloaded into the cache every Hugging Face tool shares. Before any file's bytes come, Download first
// checks: the size to fetch and what training it as set up would need (the repo's config.json through the
// panel's estimate); a second press downloads, on a thread of its own, with progress (bytes, speed, time
// left) and Cancel (the partial file is kept: the next download resumes it). A private or gated repo says
// what to do and takes a token, saved where huggingface_hub reads it when asked. On success, folder() is
// the model's snapshot folder.
#pragma once

#include <QDialog>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

#include "models/model_args.h"

class QCheckBox;
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
  QCheckBox* saveTokenBox() const { return saveToken_; }
  QPushButton* downloadButton() const { return download_; }
  QPushButton* cancelButton() const { return cancel_; }
  QLabel* status() const { return status_; }
  bool running() const { return running_; }
  QString folder() const { return folder_; }

  // What the setup would need with another model, in words, and whether that fits this computer (the
  // panel's estimate). Setting it narrows the suggested models to those that fit.
  struct Fit {
    QString text;
    bool fits = true;
  };
  void setFitEstimate(std::function<Fit(const tb::models::ModelArgs&)> estimate);

  // Download's first press: asks the Hub what the repo holds (checked() when answered).
  void check();
  // Download's second press (for the repo and revision checked): fetches it (finished() when done).
  void startDownload();
  bool checkedCurrent() const { return !checkedKey_.isEmpty() && checkedKey_ == currentKey(); }

 Q_SIGNALS:
  void checked(bool ok, const QString& message);
  void finished(bool ok, const QString& message);

 protected:
  void reject() override;  // while downloading: Cancel first

 private:
  void onDone(bool ok, const QString& message, const QString& folder);
  void onChecked(bool ok, const QString& message, const QString& configJson, const QString& key, qint64 toFetch);
  QString currentKey() const;
  void fillSuggestions();
  void setRunning(bool running);

  QComboBox* repo_;
  QLineEdit* revision_;
  QLineEdit* token_;
  QCheckBox* saveToken_;
  QProgressBar* progress_;
  QLabel* status_;
  QPushButton* download_;
  QPushButton* cancel_;
  bool running_ = false;
  bool closeWhenStopped_ = false;
  QString folder_;
  QString checkedKey_;  // repo@revision the last check answered
  std::function<Fit(const tb::models::ModelArgs&)> fitEstimate_;
  std::atomic<bool> stop_{false};
  struct JoinThread {
    void operator()(QThread* thread) const;
  };
  std::unique_ptr<QThread, JoinThread> thread_;
};

}  // namespace tb::ui
