// "Models on this computer" on the Setup tab: every model repo in the shared Hugging Face cache that
// Tunebench can train (whoever downloaded it), recognised from its config.json: family, parameters, size
// on disk, commit. Open (or a double click) opens one; repos it cannot train are counted, not listed.
#pragma once

#include <QDialog>
#include <QString>

class QLabel;
class QPushButton;
class QTableWidget;

namespace tb::ui {

class LocalModelsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit LocalModelsDialog(QWidget* parent = nullptr);

  QTableWidget* table() const { return table_; }
  QPushButton* openButton() const { return open_; }
  QLabel* note() const { return note_; }
  QString folder() const { return folder_; }  // the one opened

 private:
  void fill();

  QTableWidget* table_;
  QLabel* note_;
  QPushButton* open_;
  QString folder_;
};

}  // namespace tb::ui
