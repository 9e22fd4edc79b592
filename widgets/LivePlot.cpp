#include "LivePlot.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QSlider>
#include <QTextStream>
#include <QVBoxLayout>

#include "qcp.h"

namespace tb::ui {

struct LivePlot::Run {
  QString label;
  QColor color;
  QCPGraph* loss = nullptr;
  QCPGraph* lossEma = nullptr;
  QCPGraph* tps = nullptr;
  QCPGraph* stepTime = nullptr;
  QCPGraph* memory = nullptr;
  std::vector<PlotSample> history;  // arrival order, for EMA recomputation and CSV
  double ema = 0;
  struct Region {
    double first, last;
    std::vector<QCPItemRect*> items;  // one band per panel
  };
  std::vector<Region> warmup;
  double warmupStepSeconds = 0;  // sum of step times of warm-up steps
  double warmupEventSeconds = -1;  // from the compile event, when it came
  QCPItemText* warmupLabel = nullptr;
  double memoryFloorGib = -1;
  QCPItemStraightLine* memoryFloorLine = nullptr;
  QCPItemText* memoryFloorLabel = nullptr;
};

namespace {
const QColor kRunColors[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44), QColor(214, 39, 40),
                             QColor(148, 103, 189), QColor(140, 86, 75)};

void styleRect(QCPAxisRect* rect, const QString& valueLabel) {
  rect->axis(QCPAxis::atBottom)->setLabel("step");
  rect->axis(QCPAxis::atLeft)->setLabel(valueLabel);
  rect->setRangeDrag(Qt::Horizontal | Qt::Vertical);
  rect->setRangeZoom(Qt::Horizontal | Qt::Vertical);
}

constexpr int kAntialiasLimit = 20000;

QString phaseName(bool warmup) { return warmup ? "warmup" : "steady"; }
}  // namespace

LivePlot::LivePlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  // Four panels in a 2x2 grid of one plot, so one replot covers them all.
  lossRect_ = plot_->axisRect(0);
  tpsRect_ = new QCPAxisRect(plot_);
  stepRect_ = new QCPAxisRect(plot_);
  memRect_ = new QCPAxisRect(plot_);
  // Layout: the legend's row on top, then the panels in a grid of their own (so the legend's width does
  // not widen one column of panels).
  auto* panels = new QCPLayoutGrid;
  plot_->plotLayout()->take(lossRect_);
  plot_->plotLayout()->simplify();
  panels->addElement(0, 0, lossRect_);
  panels->addElement(0, 1, tpsRect_);
  panels->addElement(1, 0, stepRect_);
  panels->addElement(1, 1, memRect_);
  styleRect(lossRect_, "loss");
  styleRect(tpsRect_, "tokens / s");
  styleRect(stepRect_, "step time (s)");
  styleRect(memRect_, "peak memory (GiB)");
  // The legend is a row of its own above the panels: it never covers a curve.
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
  plot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot_->legend->setBorderPen(Qt::NoPen);
  lossRect_->insetLayout()->take(plot_->legend);
  lossRect_->insetLayout()->simplify();
  auto* legendRow = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(0, 0, legendRow);
  plot_->plotLayout()->addElement(1, 0, panels);
  legendRow->addElement(0, 0, plot_->legend);
  // An empty legend (before the first run) says its row may be only its margins wide, and the layout
  // gives that to the whole column: the panels were squeezed into a corner. A spacer that may grow lets them
  // take the width.
  legendRow->addElement(0, 1, new QCPLayoutElement(plot_));
  legendRow->setColumnStretchFactor(1, 0.001);
  legendRow->setMargins(QMargins(0, 0, 0, 0));
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->setPlottingHint(QCP::phCacheLabels, true);
  plot_->setAutoAddPlottableToLegend(false);
  plot_->setMinimumSize(360, 240);

  // Panning or zooming one panel moves the step axis of all four; the user's view is then kept.
  const QList<QCPAxisRect*> rects = {lossRect_, tpsRect_, stepRect_, memRect_};
  for (QCPAxisRect* r : rects) {
    connect(r->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [rects](const QCPRange& range) {
              for (QCPAxisRect* other : rects) other->axis(QCPAxis::atBottom)->setRange(range);
            });
  }
  connect(plot_, &QCustomPlot::mouseWheel, this, [this] { followData_ = false; });
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (e->buttons() != Qt::NoButton) followData_ = false;
  });
  connect(plot_, &QCustomPlot::afterReplot, this, [this] { ++replotCount_; });

  smoothingSlider_ = new QSlider(Qt::Horizontal, this);
  smoothingSlider_->setRange(0, 99);
  smoothingSlider_->setValue(int(smoothing_ * 100));
  smoothingSlider_->setToolTip("Weight of the exponential moving average drawn over the raw loss");
  smoothingSlider_->setMaximumWidth(140);
  smoothingLabel_ = new QLabel(this);
  smoothingLabel_->setMinimumWidth(32);
  connect(smoothingSlider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  logBox_ = new QCheckBox("Log loss", this);
  logBox_->setToolTip("Loss on a logarithmic axis");
  connect(logBox_, &QCheckBox::toggled, this, &LivePlot::setLogScale);
  auto* fit = new QPushButton("Fit", this);
  fit->setToolTip("Follow the data again after panning or zooming");
  connect(fit, &QPushButton::clicked, this, &LivePlot::fitToData);
  auto* png = new QPushButton("PNG…", this);
  png->setToolTip("Save the plots as a PNG image");
  connect(png, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Export plot", "tunebench-plot.png", "PNG (*.png)");
    if (!path.isEmpty()) exportPng(path);
  });
  auto* csv = new QPushButton("CSV…", this);
  csv->setToolTip("Save the plotted metrics as CSV");
  connect(csv, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Export data", "tunebench-metrics.csv", "CSV (*.csv)");
    if (!path.isEmpty()) exportCsv(path);
  });

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel("Smoothing", this));
  controls->addWidget(smoothingSlider_);
  controls->addWidget(smoothingLabel_);
  controls->addWidget(logBox_);
  controls->addStretch(1);
  controls->addWidget(fit);
  controls->addWidget(png);
  controls->addWidget(csv);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(controls);
  layout->addWidget(plot_, 1);
  smoothingLabel_->setText(QString::number(smoothing_, 'f', 2));

  drainTimer_.setSingleShot(true);
  drainTimer_.setInterval(40);
  connect(&drainTimer_, &QTimer::timeout, this, &LivePlot::drainNow);
}

LivePlot::~LivePlot() = default;

QCPGraph* LivePlot::addGraph(QCPAxisRect* rect, const QColor& color, double width, const QString& name) {
  QCPGraph* g = plot_->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setPen(QPen(color, width));
  g->setName(name);
  g->setAdaptiveSampling(true);
  return g;
}

int LivePlot::addRun(const QString& label) {
  auto run = std::make_unique<Run>();
  run->label = label;
  run->color = kRunColors[runs_.size() % (sizeof(kRunColors) / sizeof(kRunColors[0]))];
  QColor faint = run->color;
  faint.setAlpha(90);
  run->loss = addGraph(lossRect_, faint, 1, label + " loss");
  run->lossEma = addGraph(lossRect_, run->color, 2, label + " EMA");
  run->tps = addGraph(tpsRect_, run->color, 1.5, label);
  run->stepTime = addGraph(stepRect_, run->color, 1.5, label);
  run->memory = addGraph(memRect_, run->color, 1.5, label);
  run->lossEma->addToLegend();
  runs_.push_back(std::move(run));
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return int(runs_.size()) - 1;
}

QString LivePlot::runLabel(int run) const {
  return run >= 0 && run < runCount() ? runs_[run]->label : QString();
}

void LivePlot::clear() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.clear();
    pendingWarmup_.clear();
  }
  plot_->clearGraphs();
  plot_->clearItems();
  runs_.clear();
  followData_ = true;
  // Empty panels show no range of the run before (a failed start left its axes up).
  for (QCPAxisRect* rect : {lossRect_, tpsRect_, stepRect_, memRect_}) {
    rect->axis(QCPAxis::atBottom)->setRange(0, 1);
    if (rect == lossRect_ && logScale_)
      rect->axis(QCPAxis::atLeft)->setRange(0.1, 10);
    else
      rect->axis(QCPAxis::atLeft)->setRange(0, 1);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::append(int run, const PlotSample& sample) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({run, sample});
  }
  scheduleDrain();
}

void LivePlot::append(int run, const std::vector<PlotSample>& samples) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& s : samples) pending_.push_back({run, s});
  }
  scheduleDrain();
}

void LivePlot::setWarmupSeconds(int run, double seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pendingWarmup_.emplace_back(run, seconds);
  }
  scheduleDrain();
}

void LivePlot::setMemoryFloor(int r, double gib) {
  if (r < 0 || r >= runCount() || !(gib >= 0)) return;
  Run& run = *runs_[r];
  run.memoryFloorGib = gib;
  if (!run.memoryFloorLine) {
    run.memoryFloorLine = new QCPItemStraightLine(plot_);
    run.memoryFloorLine->setClipAxisRect(memRect_);
    for (QCPItemPosition* p : {run.memoryFloorLine->point1, run.memoryFloorLine->point2}) {
      p->setAxisRect(memRect_);
      p->setAxes(memRect_->axis(QCPAxis::atBottom), memRect_->axis(QCPAxis::atLeft));
    }
    run.memoryFloorLine->setPen(QPen(run.color, 1, Qt::DashLine));
    run.memoryFloorLabel = new QCPItemText(plot_);
    run.memoryFloorLabel->setClipAxisRect(memRect_);
    run.memoryFloorLabel->position->setAxisRect(memRect_);
    run.memoryFloorLabel->position->setAxes(memRect_->axis(QCPAxis::atBottom), memRect_->axis(QCPAxis::atLeft));
    run.memoryFloorLabel->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    run.memoryFloorLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    run.memoryFloorLabel->setColor(run.color.darker(130));
  }
  run.memoryFloorLine->point1->setCoords(0, gib);
  run.memoryFloorLine->point2->setCoords(1, gib);
  run.memoryFloorLabel->position->setCoords(0.02, gib);
  // Short, in the run's colour: a run's name before it ran past the panel at 1024 px.
  run.memoryFloorLabel->setText(QString("floor %1 GiB").arg(gib, 0, 'f', gib < 1 ? 3 : 2));
  if (followData_) rescale();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

double LivePlot::memoryFloor(int r) const { return r >= 0 && r < runCount() ? runs_[r]->memoryFloorGib : -1; }

// "Data arrived", without payload: the first producer after a drain starts the GUI thread's timer.
void LivePlot::scheduleDrain() {
  if (drainScheduled_.exchange(true)) return;
  QMetaObject::invokeMethod(
      this, [this] { if (!drainTimer_.isActive()) drainTimer_.start(); }, Qt::QueuedConnection);
}

void LivePlot::drainNow() {
  std::vector<Pending> pending;
  std::vector<std::pair<int, double>> warmups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_);
    warmups.swap(pendingWarmup_);
    drainScheduled_ = false;
  }
  drainTimer_.stop();
  if (pending.empty() && warmups.empty()) return;

  // Group consecutive points of the same run so each graph gets one bulk add.
  std::vector<PlotSample> batch;
  for (size_t i = 0; i < pending.size(); ++i) {
    batch.push_back(pending[i].sample);
    const bool last = i + 1 == pending.size() || pending[i + 1].run != pending[i].run;
    if (last) {
      const int r = pending[i].run;
      if (r >= 0 && r < runCount()) addToRun(r, batch);
      batch.clear();
    }
  }
  for (const auto& [r, seconds] : warmups) {
    if (r < 0 || r >= runCount()) continue;
    runs_[r]->warmupEventSeconds = seconds;
    updateWarmup(r);
  }
  ++drainCount_;
  // Dense curves look the same without antialiasing and draw several times faster.
  int points = 0;
  for (const auto& r : runs_) points += int(r->history.size());
  plot_->setNotAntialiasedElements(points > kAntialiasLimit ? QCP::aePlottables : QCP::aeNone);
  if (followData_) rescale();
  plot_->replot(QCustomPlot::rpQueuedReplot);
  Q_EMIT drained(int(pending.size()));
}

void LivePlot::addToRun(int r, const std::vector<PlotSample>& samples) {
  Run& run = *runs_[r];
  const int n = int(samples.size());
  QVector<QCPGraphData> loss(n), ema(n), tps(n), stepTime(n), memory(n);
  const double w = smoothing_;
  bool sorted = run.history.empty() || samples.front().step > run.history.back().step;
  for (int i = 0; i < n; ++i) {
    const PlotSample& s = samples[i];
    if (i > 0 && s.step <= samples[i - 1].step) sorted = false;
    run.ema = run.history.empty() && i == 0 ? s.loss : w * run.ema + (1 - w) * s.loss;
    loss[i] = {s.step, s.loss};
    ema[i] = {s.step, run.ema};
    tps[i] = {s.step, s.tokensPerSecond};
    stepTime[i] = {s.step, s.stepTimeS};
    memory[i] = {s.step, s.peakMemoryGib};
    run.history.push_back(s);
  }
  run.loss->data()->add(loss, sorted);
  run.lossEma->data()->add(ema, sorted);
  run.tps->data()->add(tps, sorted);
  run.stepTime->data()->add(stepTime, sorted);
  run.memory->data()->add(memory, sorted);

  bool warmupChanged = false;
  for (const PlotSample& s : samples) {
    if (!s.warmup) continue;
    warmupChanged = true;
    run.warmupStepSeconds += s.stepTimeS;
    if (!run.warmup.empty() && s.step >= run.warmup.back().first && s.step <= run.warmup.back().last + 1) {
      run.warmup.back().last = std::max(run.warmup.back().last, s.step);
      continue;
    }
    // Shaded on every panel, with an edge, so a warm-up of one step in a long run still shows.
    Run::Region region{s.step, s.step, {}};
    for (QCPAxisRect* panel : {lossRect_, tpsRect_, stepRect_, memRect_}) {
      auto* rect = new QCPItemRect(plot_);
      rect->setClipAxisRect(panel);
      for (QCPItemPosition* p : {rect->topLeft, rect->bottomRight}) {
        p->setAxisRect(panel);
        p->setAxes(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
        p->setTypeX(QCPItemPosition::ptPlotCoords);
        p->setTypeY(QCPItemPosition::ptAxisRectRatio);
      }
      QColor fill = run.color;
      fill.setAlpha(70);
      rect->setBrush(fill);
      QColor edge = run.color.darker(120);
      edge.setAlpha(160);
      rect->setPen(QPen(edge, 1, Qt::DashLine));
      rect->setLayer("background");
      region.items.push_back(rect);
    }
    run.warmup.push_back(region);
  }
  if (warmupChanged) updateWarmup(r);
}

// Places the shaded regions (half a step either side) and the annotation of the warm-up cost; with
// several runs the labels stack so they do not overlap.
void LivePlot::updateWarmup(int r) {
  Run& run = *runs_[r];
  for (const auto& region : run.warmup)
    for (QCPItemRect* item : region.items) {
      item->topLeft->setCoords(region.first - 0.5, 0);
      item->bottomRight->setCoords(region.last + 0.5, 1);
    }
  if (run.warmup.empty()) return;
  if (!run.warmupLabel) {
    run.warmupLabel = new QCPItemText(plot_);
    run.warmupLabel->setClipAxisRect(stepRect_);
    run.warmupLabel->position->setAxisRect(stepRect_);
    run.warmupLabel->position->setAxes(stepRect_->axis(QCPAxis::atBottom), stepRect_->axis(QCPAxis::atLeft));
    run.warmupLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    run.warmupLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    run.warmupLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    run.warmupLabel->setColor(run.color.darker(130));
  }
  run.warmupLabel->position->setCoords(run.warmup.front().last + 0.6, 0.04 + 0.09 * r);
  run.warmupLabel->setText(warmupAnnotation(r));
}

QString LivePlot::warmupAnnotation(int r) const {
  if (r < 0 || r >= runCount() || runs_[r]->warmup.empty()) return {};
  const Run& run = *runs_[r];
  int steps = 0;
  for (const auto& s : run.history) steps += s.warmup ? 1 : 0;
  const double seconds = run.warmupEventSeconds >= 0 ? run.warmupEventSeconds : run.warmupStepSeconds;
  // In the run's own colour: with several runs its long folder name would run past the panel.
  return QString("compile warm-up: %1 s (%2 step%3)")
      .arg(seconds, 0, 'f', seconds < 10 ? 2 : 1)
      .arg(steps)
      .arg(steps == 1 ? "" : "s");
}

void LivePlot::recomputeEma(Run& run) {
  QVector<QCPGraphData> ema;
  ema.reserve(int(run.history.size()));
  double value = 0;
  for (size_t i = 0; i < run.history.size(); ++i) {
    value = i == 0 ? run.history[i].loss : smoothing_ * value + (1 - smoothing_) * run.history[i].loss;
    ema.push_back({run.history[i].step, value});
  }
  run.ema = value;
  run.lossEma->data()->set(ema, false);
}

void LivePlot::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.999);
  if (weight == smoothing_) return;
  smoothing_ = weight;
  smoothingLabel_->setText(QString::number(weight, 'f', 2));
  if (smoothingSlider_->value() != int(std::lround(weight * 100))) {
    const QSignalBlocker block(smoothingSlider_);
    smoothingSlider_->setValue(int(std::lround(weight * 100)));
  }
  for (auto& run : runs_) recomputeEma(*run);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::setLogScale(bool on) {
  logScale_ = on;
  if (logBox_->isChecked() != on) {
    const QSignalBlocker block(logBox_);
    logBox_->setChecked(on);
  }
  QCPAxis* axis = lossRect_->axis(QCPAxis::atLeft);
  axis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on)
    axis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  else
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  rescale();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::fitToData() {
  followData_ = true;
  rescale();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

// Fits each panel to its graphs, with a little head room, and gives all four the same step range.
void LivePlot::rescale() {
  for (QCPAxisRect* rect : {lossRect_, tpsRect_, stepRect_, memRect_}) {
    bool any = false;
    QCPRange keys, values;
    const bool log = rect == lossRect_ && logScale_;
    for (QCPGraph* g : rect->graphs()) {
      if (g->data()->isEmpty()) continue;
      bool foundK = false, foundV = false;
      const QCPRange k = g->getKeyRange(foundK);
      const QCPRange v = g->getValueRange(foundV, log ? QCP::sdPositive : QCP::sdBoth);
      if (!foundK || !foundV) continue;
      if (!any) {
        keys = k;
        values = v;
        any = true;
      } else {
        keys.expand(k);
        values.expand(v);
      }
    }
    if (rect == memRect_) {
      for (const auto& run : runs_) {
        if (run->memoryFloorGib < 0 || !any) continue;
        values.expand(run->memoryFloorGib);
      }
    }
    if (!any) continue;
    if (keys.size() <= 0) keys = QCPRange(keys.lower - 1, keys.upper + 1);
    QCPAxis* valueAxis = rect->axis(QCPAxis::atLeft);
    if (log) {
      valueAxis->setRange(values.lower / 1.15, values.upper * 1.15);
    } else {
      const double pad = values.size() > 0 ? values.size() * 0.06 : std::max(1e-9, std::abs(values.upper) * 0.1);
      valueAxis->setRange(std::min(0.0, values.lower) < 0 ? values.lower - pad : std::max(0.0, values.lower - pad),
                          values.upper + pad);
    }
    rect->axis(QCPAxis::atBottom)->setRange(keys);
  }
}

bool LivePlot::exportPng(const QString& path, int width, int height) {
  drainNow();
  return plot_->savePng(path, width, height);
}

QString LivePlot::csvText() const {
  QString out;
  QTextStream s(&out);
  s << "run,step,loss,loss_ema,tokens_per_second,step_time_s,peak_memory_gib,phase\n";
  for (int r = 0; r < runCount(); ++r) {
    const Run& run = *runs_[r];
    const std::vector<double> ema = emaValues(r);
    QString label = run.label;
    label.replace('"', "\"\"");
    for (size_t i = 0; i < run.history.size(); ++i) {
      const PlotSample& p = run.history[i];
      s << '"' << label << "\"," << QString::number(p.step, 'g', 12) << ',' << QString::number(p.loss, 'g', 9) << ','
        << QString::number(ema[i], 'g', 9) << ',' << QString::number(p.tokensPerSecond, 'g', 9) << ','
        << QString::number(p.stepTimeS, 'g', 9) << ',' << QString::number(p.peakMemoryGib, 'g', 9) << ','
        << phaseName(p.warmup) << '\n';
    }
  }
  return out;
}

bool LivePlot::exportCsv(const QString& path, QString* error) const {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = file.errorString();
    return false;
  }
  file.write(csvText().toUtf8());
  if (!file.commit()) {
    if (error) *error = file.errorString();
    return false;
  }
  return true;
}

int LivePlot::pointCount(int run) const {
  return run >= 0 && run < runCount() ? runs_[run]->loss->data()->size() : 0;
}

std::vector<double> LivePlot::emaValues(int r) const {
  std::vector<double> out;
  if (r < 0 || r >= runCount()) return out;
  const auto& h = runs_[r]->history;
  out.reserve(h.size());
  double value = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    value = i == 0 ? h[i].loss : smoothing_ * value + (1 - smoothing_) * h[i].loss;
    out.push_back(value);
  }
  return out;
}

int LivePlot::warmupBandCount(int run) const {
  int bands = 0;
  if (run >= 0 && run < runCount())
    for (const auto& region : runs_[run]->warmup) bands += int(region.items.size());
  return bands;
}

bool LivePlot::legendOutsidePanels() const { return plot_->legend->layout() != lossRect_->insetLayout() && plot_->legend->layout(); }

int LivePlot::warmupRegionCount(int run) const {
  return run >= 0 && run < runCount() ? int(runs_[run]->warmup.size()) : 0;
}

}  // namespace tb::ui
