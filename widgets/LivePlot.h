// Live training plots on one QCustomPlot: loss (raw and EMA-smoothed, optional log scale), tokens per
// second, step time with the compile warm-up steps shaded and annotated, and peak memory. Several
// runs can share the axes (overlay, e.g. eager vs compile).
//
// Producers on any thread call append(); points wait in a buffer under a mutex and the GUI thread
// drains them on a short timer with a single queued replot, never one per point (PlotJuggler's
// pattern). Data lives in QCPGraphDataContainers with adaptive sampling, so 100k points stay smooth.
#pragma once

#include <QColor>
#include <QString>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

class QCustomPlot;
class QCPAxisRect;
class QCPGraph;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QCheckBox;
class QLabel;
class QSlider;

namespace tb::ui {

// One optimizer step as the plots need it (the UI converts StepMetrics to this).
struct PlotSample {
  double step = 0;
  double loss = 0;
  double tokensPerSecond = 0;
  double stepTimeS = 0;
  double peakMemoryGib = 0;
  bool warmup = false;
};

class LivePlot : public QWidget {
  Q_OBJECT
 public:
  explicit LivePlot(QWidget* parent = nullptr);
  ~LivePlot() override;

  // GUI thread. Returns the run's index for append(); colours are assigned in order.
  int addRun(const QString& label);
  void clear();  // removes every run (and anything still buffered)
  int runCount() const { return int(runs_.size()); }
  QString runLabel(int run) const;

  // Any thread. Buffered until the next drain.
  void append(int run, const PlotSample& sample);
  void append(int run, const std::vector<PlotSample>& samples);
  // Any thread: the measured compile warm-up of a run (the `compile` event), shown on the step-time plot.
  void setWarmupSeconds(int run, double seconds);
  // GUI thread: what the run's weights, gradients and optimizer states take (the recipe's memory budget),
  // drawn as a dashed line under the peak-memory curve; the gap is activations and workspace.
  void setMemoryFloor(int run, double gib);

  // GUI thread: moves everything buffered into the graphs and queues one replot. Called by the timer;
  // public so callers (tests, export) can flush synchronously.
  void drainNow();
  void setDrainIntervalMs(int ms) { drainTimer_.setInterval(ms); }
  int drainIntervalMs() const { return drainTimer_.interval(); }

  // EMA weight in [0, 1): ema_1 = x_1, ema_t = w * ema_{t-1} + (1 - w) * x_t.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  void setLogScale(bool on);
  bool logScale() const { return logScale_; }
  // Re-enables following the data after the user panned or zoomed.
  void fitToData();

  bool exportPng(const QString& path, int width = 0, int height = 0);
  // step,loss,loss_ema,tokens_per_second,step_time_s,peak_memory_gib,phase — one row per point, per run.
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  QString csvText() const;

  // Inspection (tests, status): counts and the data as plotted.
  int pointCount(int run) const;
  std::vector<double> emaValues(int run) const;
  int warmupBandCount(int run) const;  // shaded bands of its warm-up regions, over all panels
  bool legendOutsidePanels() const;    // the legend sits in a row of its own, not over a panel
  int warmupRegionCount(int run) const;
  QString warmupAnnotation(int run) const;
  double memoryFloor(int run) const;  // -1 when none was set
  long drainCount() const { return drainCount_; }
  long replotCount() const { return replotCount_; }
  QCustomPlot* plot() const { return plot_; }

 Q_SIGNALS:
  void drained(int points);

 private:
  struct Run;
  struct Pending {
    int run;
    PlotSample sample;
  };
  void scheduleDrain();
  void addToRun(int run, const std::vector<PlotSample>& samples);
  void updateWarmup(int run);
  void recomputeEma(Run& run);
  void rescale();
  QCPGraph* addGraph(QCPAxisRect* rect, const QColor& color, double width, const QString& name);

  QCustomPlot* plot_;
  QCPAxisRect* lossRect_;
  QCPAxisRect* tpsRect_;
  QCPAxisRect* stepRect_;
  QCPAxisRect* memRect_;
  QSlider* smoothingSlider_;
  QLabel* smoothingLabel_;
  QCheckBox* logBox_;
  std::vector<std::unique_ptr<Run>> runs_;
  QTimer drainTimer_;
  double smoothing_ = 0.9;
  bool logScale_ = false;
  bool followData_ = true;
  long drainCount_ = 0;
  long replotCount_ = 0;

  std::mutex mutex_;  // guards pending_ and pendingWarmup_
  std::vector<Pending> pending_;
  std::vector<std::pair<int, double>> pendingWarmup_;
  std::atomic<bool> drainScheduled_{false};
};

}  // namespace tb::ui
