// Past runs: every run folder under the setup's output folder and the ones opened before, listed in a
// stable order (newest start first) with recipe, eager/compile, start time, status and final loss; shown
// or overlaid from their logs/metrics.jsonl on the same axes, with a summary of each (median steady
// tokens/s, warm-up, final loss); "Compare eager vs compile" sets a setup's compiled run beside its
// eager twin in one click and says the speed-up and the memory saved. Recent runs live in QSettings.
#pragma once

#include <QStringList>
#include <QVector>
#include <QWidget>

#include "RunHistory.h"

class QLabel;
class QResizeEvent;
class QSplitter;
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

  // The folder whose run folders are listed (the setup's output folder); the list is re-read when it changes.
  void setRunsRoot(const QString& dir);
  void refreshList();
  QStringList listedRuns() const;  // run folders, in the table's order
  const QVector<RunLog>& listedLogs() const { return listed_; }
  QTableWidget* runsTable() const { return table_; }
  // Whether every column of the runs list is in view (the splitter gives the list the width it needs).
  bool runsColumnsInView() const;
  void selectRuns(const QStringList& folders);

  QStringList recentRuns() const { return recent_; }
  // Remembers a run folder (at most 24, saved at once); the table's order does not change by it.
  void addRecentRun(const QString& outputDir);

  // Shows the two selected runs, or else the newest compiled run and the newest eager run of the same
  // setup, side by side; false with the reason when there is no such pair.
  bool compareEagerVsCompile(QString* error = nullptr);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fitRunsList();
  void openDialog(bool overlay);
  void updateSummary();
  QStringList selectedRuns() const;

  LivePlot* plot_;
  QTableWidget* table_;
  QSplitter* splitter_;
  bool splitterMoved_ = false;  // the user's sizes win over fitting the table
  QTableWidget* summary_;
  QLabel* comparison_;
  QVector<RunLog> shown_;
  QVector<RunLog> listed_;
  QStringList recent_;
  QString root_;
};

// "compile 1.44x faster, 31% less memory": a compiled run against an eager one (steady medians, peaks).
QString compareRuns(const RunLog& eager, const RunLog& compiled);

}  // namespace tb::ui
