// The run's checkpoints, read from their manifests (step, epoch, loss, recipe, compile, dtype, size,
// time); folders without a manifest are marked incomplete. Reload resumes training from the selected
// checkpoint, "Start new run from these weights" fine-tunes afresh from it, "Export…" writes it as a
// GGUF file (ExportDialog), "Open folder" shows it.
#pragma once

#include <QVector>
#include <QUrl>
#include <QWidget>

#include "RunHistory.h"

class QFileSystemWatcher;
class QLabel;
class QPushButton;
class QTableWidget;
class QTimer;

namespace tb::ui {

class ExportDialog;

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
  void select(int row);  // the newest complete checkpoint is selected when the user has chosen none
  // What "Open folder" opens: the selected checkpoint's folder, else the run's, as an absolute file: URL.
  QUrl folderUrl() const;
  // Disables Reload / new run while a run is going (export stays: it reads a finished checkpoint).
  void setRunActive(bool active);
  // The export dialog for the selected checkpoint (non-modal, deleted on close); nullptr when none is selected.
  ExportDialog* openExport();

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
  QPushButton* export_;
  QFileSystemWatcher* watcher_;
  QTimer* refreshTimer_;
  bool runActive_ = false;
};

}  // namespace tb::ui
