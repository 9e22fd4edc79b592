// What "Models on this computer…" and "Datasets on this computer…" share: a table of the repos in the
// shared Hugging Face cache, a line under it, and one button (or a double click) that closes with the
// selected row's choice (the first column's Qt::UserRole data).
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

class QLabel;
class QPushButton;
class QTableWidget;

namespace tb::ui {

class CachedReposDialog : public QDialog {
  Q_OBJECT
 public:
  QTableWidget* table() const { return table_; }
  QLabel* note() const { return note_; }

 protected:
  CachedReposDialog(const QString& title, const QStringList& headers, const QString& action, QWidget* parent);
  QPushButton* actionButton() const { return action_; }
  QString chosen() const { return chosen_; }
  // After the rows are in: sorted by the first column, the first selected, the note set.
  void finishFill(const QString& note);

 private:
  QTableWidget* table_;
  QLabel* note_;
  QPushButton* action_;
  QString chosen_;
};

}  // namespace tb::ui
