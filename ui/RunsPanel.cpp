#include "RunsPanel.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "LivePlot.h"

namespace tb::ui {

namespace {
constexpr int kMaxRecent = 12;

QString runLabel(const RunLog& log) {
  QDir dir = QFileInfo(log.path).dir();
  if (dir.dirName() == "logs") dir.cdUp();
  const bool compiled = log.compileSeconds >= 0 || log.warmupSteps() > 0;
  return dir.dirName() + (compiled ? " (compile)" : " (eager)");
}
}  // namespace

RunsPanel::RunsPanel(QWidget* parent)
    : QWidget(parent), plot_(new LivePlot(this)), recentList_(new QListWidget(this)),
      summary_(new QTableWidget(0, 8, this)), comparison_(new QLabel(this)) {
  auto* openButton = new QPushButton("Open run folder…", this);
  auto* overlayButton = new QPushButton("Overlay run folder…", this);
  auto* showSelected = new QPushButton("Show", this);
  auto* overlaySelected = new QPushButton("Overlay", this);
  auto* clearButton = new QPushButton("Clear", this);
  summary_->setHorizontalHeaderLabels({"Run", "Steps", "Final loss", "Median tok/s (steady)", "Median step (s)",
                                       "Warm-up steps", "Compile warm-up (s)", "Status"});
  summary_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  summary_->verticalHeader()->setVisible(false);
  summary_->horizontalHeader()->setStretchLastSection(true);
  summary_->setMaximumHeight(120);
  recentList_->setToolTip("Recent runs: double-click to show, or select and Overlay");

  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(new QLabel("Recent runs", left));
  leftLayout->addWidget(recentList_, 1);
  auto* selectedRow = new QHBoxLayout;
  selectedRow->addWidget(showSelected);
  selectedRow->addWidget(overlaySelected);
  leftLayout->addLayout(selectedRow);
  leftLayout->addWidget(openButton);
  leftLayout->addWidget(overlayButton);
  leftLayout->addWidget(clearButton);

  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addWidget(plot_, 1);
  rightLayout->addWidget(summary_);
  rightLayout->addWidget(comparison_);

  auto* splitter = new QSplitter(this);
  splitter->addWidget(left);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(splitter);

  auto showItem = [this](bool overlay) {
    const auto* item = recentList_->currentItem();
    if (!item) return;
    QString error;
    if (!showRun(item->data(Qt::UserRole).toString(), overlay, &error)) QMessageBox::warning(this, "Runs", error);
  };
  connect(openButton, &QPushButton::clicked, this, [this] { openDialog(false); });
  connect(overlayButton, &QPushButton::clicked, this, [this] { openDialog(true); });
  connect(showSelected, &QPushButton::clicked, this, [showItem] { showItem(false); });
  connect(overlaySelected, &QPushButton::clicked, this, [showItem] { showItem(true); });
  connect(recentList_, &QListWidget::itemDoubleClicked, this, [showItem] { showItem(false); });
  connect(clearButton, &QPushButton::clicked, this, &RunsPanel::clearPlot);

  recent_ = QSettings().value("runs/recent").toStringList();
  fillRecent();
}

void RunsPanel::openDialog(bool overlay) {
  const QString dir = QFileDialog::getExistingDirectory(this, "A run's output folder");
  if (dir.isEmpty()) return;
  QString error;
  if (!showRun(dir, overlay, &error)) QMessageBox::warning(this, "Runs", error);
}

bool RunsPanel::showRun(const QString& path, bool overlay, QString* error) {
  RunLog log = readRunLog(path);
  if (log.steps.empty()) {
    if (error)
      *error = log.errors.isEmpty() ? log.path + ": no steps logged yet" : log.errors.join('\n');
    return false;
  }
  if (!overlay) clearPlot();
  const int run = plot_->addRun(runLabel(log));
  std::vector<PlotSample> samples;
  samples.reserve(log.steps.size());
  for (const auto& s : log.steps)
    samples.push_back({double(s.step), s.loss, s.tokens_per_second, s.step_time_s, s.peak_memory_gib,
                       s.phase == tb::training::Phase::Warmup});
  plot_->append(run, samples);
  if (log.compileSeconds >= 0) plot_->setWarmupSeconds(run, log.compileSeconds);
  plot_->drainNow();
  shown_.push_back(log);
  QDir dir = QFileInfo(log.path).dir();
  if (dir.dirName() == "logs") dir.cdUp();
  addRecentRun(dir.absolutePath());
  updateSummary();
  return true;
}

void RunsPanel::clearPlot() {
  plot_->clear();
  shown_.clear();
  updateSummary();
}

void RunsPanel::addRecentRun(const QString& outputDir) {
  if (outputDir.isEmpty()) return;
  const QString abs = QDir(outputDir).absolutePath();
  recent_.removeAll(abs);
  recent_.prepend(abs);
  while (recent_.size() > kMaxRecent) recent_.removeLast();
  QSettings().setValue("runs/recent", recent_);
  fillRecent();
}

void RunsPanel::fillRecent() {
  recentList_->clear();
  for (const QString& path : recent_) {
    auto* item = new QListWidgetItem(QDir(path).dirName(), recentList_);
    item->setToolTip(path);
    item->setData(Qt::UserRole, path);
  }
}

QString RunsPanel::comparisonText() const { return comparison_->text(); }

void RunsPanel::updateSummary() {
  summary_->setRowCount(int(shown_.size()));
  for (int row = 0; row < shown_.size(); ++row) {
    const RunLog& log = shown_[row];
    const QStringList cells = {plot_->runLabel(row),
                               QString::number(log.steps.size()),
                               QString::number(log.steps.back().loss, 'f', 4),
                               QString::number(log.medianSteadyTokensPerSecond(), 'f', 0),
                               QString::number(log.medianSteadyStepSeconds(), 'f', 3),
                               QString::number(log.warmupSteps()),
                               log.compileSeconds >= 0 ? QString::number(log.compileSeconds, 'f', 2) : "–",
                               log.endStatus.isEmpty() ? "(no end event)" : log.endStatus};
    for (int c = 0; c < cells.size(); ++c) summary_->setItem(row, c, new QTableWidgetItem(cells[c]));
  }
  summary_->resizeColumnsToContents();
  if (shown_.size() == 2 && shown_[0].medianSteadyTokensPerSecond() > 0) {
    const double ratio = shown_[1].medianSteadyTokensPerSecond() / shown_[0].medianSteadyTokensPerSecond();
    comparison_->setText(QString("%1 vs %2: %3x steady tokens/s")
                             .arg(plot_->runLabel(1), plot_->runLabel(0))
                             .arg(ratio, 0, 'f', 2));
  } else {
    comparison_->clear();
  }
}

}  // namespace tb::ui
