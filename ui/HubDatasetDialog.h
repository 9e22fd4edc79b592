// The dataset box's "From the Hub…": a Hugging Face Hub dataset by repo id, one of its card's configs and a
// split (with Hugging Face's slicing). Check asks the Hub what the repo holds (its configs and splits, the
// split's files and the size to download) without fetching data; First rows downloads the split's files
// into the shared cache, with progress and Stop, and shows its first rows as the dataset reads them. Use
// (once the first rows are shown, for the repo, config and split as they are) closes with the choice
// (repo(), configName(), split(), firstRow()), for the panel to make it the config's dataset.
#pragma once

#include <QDialog>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

#include "data/json_rows.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTextBrowser;
class QThread;

namespace tb::ui {

class HubDatasetDialog : public QDialog {
  Q_OBJECT
 public:
  explicit HubDatasetDialog(QWidget* parent = nullptr);
  ~HubDatasetDialog() override;

  QLineEdit* repoField() const { return repo_; }
  QComboBox* configBox() const { return config_; }  // editable: "" is the card's default
  QLineEdit* splitField() const { return split_; }
  QPushButton* checkButton() const { return check_; }
  QPushButton* rowsButton() const { return rows_; }
  QPushButton* stopButton() const { return stop_; }
  QPushButton* useButton() const { return use_; }
  QLabel* status() const { return status_; }
  QTextBrowser* firstRows() const { return shown_; }
  bool running() const { return bool(thread_); }

  QString repo() const;
  QString configName() const;
  QString split() const;
  const tb::data::Row& firstRow() const { return firstRow_; }  // the split's first row, read by First rows

  void check();          // checked() when the Hub (or the cache, offline) answered
  void showFirstRows();  // rowsShown() when the rows are shown or could not be

 Q_SIGNALS:
  void checked(bool ok);
  void rowsShown(bool ok);

 protected:
  void reject() override;  // while working: Stop first

 private:
  void start(std::function<void()> work);
  void finish();
  void setBusy(bool busy);

  QLineEdit* repo_;
  QComboBox* config_;
  QLineEdit* split_;
  QPushButton* check_;
  QPushButton* rows_;
  QPushButton* stop_;
  QPushButton* use_;
  QLabel* status_;
  QTextBrowser* shown_;
  tb::data::Row firstRow_;
  std::atomic<bool> stopFlag_{false};
  struct JoinThread {
    void operator()(QThread* thread) const;
  };
  std::unique_ptr<QThread, JoinThread> thread_;
};

}  // namespace tb::ui
