// The run's checkpoints, read from their manifests (step, epoch, loss, recipe, compile, dtype, size,
// time); folders without a manifest are marked incomplete. Reload resumes training from the selected
// checkpoint, "Start new run from these weights" fine-tunes afresh from it, "Open folder" shows it.
#pragma once

#include <QVector>
#include <QWidget>

#include "RunHistory.h"

class QFileSystemWatcher;
class QLabel;
class QPushButton;
class QTableWidget;
class QTimer;

namespace tb::ui {

class CheckpointsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CheckpointsPanel(QWidget* parent = nullptr);

  void setOutputDir(const QString& dir);
  QString outputDir() const { return outputDir_; }
  void refresh();
  const QVector<CheckpointEntry>& entries() const { return entries_; }
  QTableWidget* table() const { return table_; }
  // The selected row's checkpoint; nullptr when none.
  const CheckpointEntry* selected() const;
  void select(int row);
  // Disables Reload / new run while a run is going.
  void setRunActive(bool active);

 Q_SIGNALS:
  void reloadRequested(const tb::ui::CheckpointEntry& checkpoint);
  void newRunRequested(const tb::ui::CheckpointEntry& checkpoint);

 private:
  void updateButtons();

  QString outputDir_;
  QVector<CheckpointEntry> entries_;
  QLabel* header_;
  QTableWidget* table_;
  QPushButton* reload_;
  QPushButton* newRun_;
  QPushButton* openFolder_;
  QFileSystemWatcher* watcher_;
  QTimer* refreshTimer_;
  bool runActive_ = false;
};

}  // namespace tb::ui
