// Past runs: reopen an output folder and plot it from logs/metrics.jsonl, or overlay several on the
// same axes (eager vs compile), with a summary of each (median steady tokens/s, warm-up, final loss).
// Recent runs are remembered in QSettings.
#pragma once

#include <QStringList>
#include <QVector>
#include <QWidget>

#include "RunHistory.h"

class QLabel;
class QListWidget;
class QTableWidget;

namespace tb::ui {

class LivePlot;

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(QWidget* parent = nullptr);

  // Plots a run (its output folder or metrics.jsonl); `overlay` keeps the runs already shown.
  bool showRun(const QString& path, bool overlay, QString* error = nullptr);
  void clearPlot();
  LivePlot* plot() const { return plot_; }
  const QVector<RunLog>& shownRuns() const { return shown_; }
  QString comparisonText() const;

  QStringList recentRuns() const { return recent_; }
  void addRecentRun(const QString& outputDir);  // most recent first, at most 12, saved at once

 private:
  void openDialog(bool overlay);
  void updateSummary();
  void fillRecent();

  LivePlot* plot_;
  QListWidget* recentList_;
  QTableWidget* summary_;
  QLabel* comparison_;
  QVector<RunLog> shown_;
  QStringList recent_;
};

}  // namespace tb::ui
