// The dataset box's "Datasets on this computer…": every dataset repo in the shared Hugging Face cache
// (whoever downloaded it: Tunebench, Hugging Face datasets, huggingface-cli), with its size on disk and
// commit. Use (or a double click) closes with repo() chosen.
#pragma once

#include <QDialog>
#include <QString>

class QLabel;
class QPushButton;
class QTableWidget;

namespace tb::ui {

class LocalDatasetsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit LocalDatasetsDialog(QWidget* parent = nullptr);

  QTableWidget* table() const { return table_; }
  QPushButton* useButton() const { return use_; }
  QLabel* note() const { return note_; }
  QString repo() const { return repo_; }  // the one chosen

 private:
  void fill();

  QTableWidget* table_;
  QLabel* note_;
  QPushButton* use_;
  QString repo_;
};

}  // namespace tb::ui
