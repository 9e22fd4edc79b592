#include "RunsPanel.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "LivePlot.h"

namespace tb::ui {

namespace {
constexpr int kMaxRecent = 24;
enum Column { kRun, kRecipe, kMode, kStarted, kStatus, kSteps, kLoss, kColumns };

QString runLabel(const RunLog& log) {
  return QDir(log.folder()).dirName() + (log.compiled ? " (compile)" : " (eager)");
}


// Newest start first; runs without a start event by their log's time; ties by folder, so the order never
// depends on what was clicked last.
bool newerFirst(const RunLog& a, const RunLog& b) {
  const QDateTime ta = a.started.isValid() ? a.started : QFileInfo(a.path).lastModified();
  const QDateTime tb = b.started.isValid() ? b.started : QFileInfo(b.path).lastModified();
  return ta != tb ? ta > tb : a.folder() < b.folder();
}
}  // namespace

QString compareRuns(const RunLog& eager, const RunLog& compiled) {
  const double e = eager.medianSteadyTokensPerSecond(), c = compiled.medianSteadyTokensPerSecond();
  if (e <= 0 || c <= 0) return "compile vs eager: no steady steps to compare yet";
  QString text = c >= e ? QString("compile %1x faster").arg(c / e, 0, 'f', 2)
                        : QString("compile %1x slower").arg(e / c, 0, 'f', 2);
  const double me = eager.peakMemoryGib(), mc = compiled.peakMemoryGib();
  if (me > 0 && mc > 0) {
    const double saved = 1.0 - mc / me;
    text += saved >= 0 ? QString(", %1% less memory").arg(int(std::lround(saved * 100)))
                       : QString(", %1% more memory").arg(int(std::lround(-saved * 100)));
  }
  text += QString(" (median steady tokens/s %1 vs %2").arg(c, 0, 'f', 0).arg(e, 0, 'f', 0);
  if (me > 0 && mc > 0) text += QString("; peak %1 vs %2 GiB").arg(mc, 0, 'f', 2).arg(me, 0, 'f', 2);
  return text + ")";
}

RunsPanel::RunsPanel(QWidget* parent)
    : QWidget(parent), plot_(new LivePlot(this)), table_(new QTableWidget(0, kColumns, this)),
      summary_(new QTableWidget(0, 8, this)), comparison_(new QLabel(this)) {
  auto* openButton = new QPushButton("Open run folder…", this);
  openButton->setToolTip("Show a run from any output folder (it joins the list)");
  auto* showSelected = new QPushButton("Show", this);
  showSelected->setToolTip("Plot the selected runs together");
  auto* compare = new QPushButton("Compare eager vs compile", this);
  compare->setObjectName("compareButton");
  compare->setToolTip("The two selected runs, or the newest compiled run and the newest eager run of the same "
                      "setup: overlaid, with the speed-up and the memory saved");
  auto* clearButton = new QPushButton("Clear plot", this);
  table_->setHorizontalHeaderLabels({"Run", "Recipe", "Mode", "Started", "Status", "Steps", "Final loss"});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setToolTip("Runs, newest first: double-click to show one; select several and Show to overlay them");
  summary_->setHorizontalHeaderLabels({"Run", "Steps", "Final loss", "tok/s", "Step (s)", "Warm-up steps", "Warm-up (s)",
                                       "Status"});
  summary_->horizontalHeaderItem(3)->setToolTip("Median trained tokens per second over the steady (post-warm-up) steps");
  summary_->horizontalHeaderItem(4)->setToolTip("Median step time over the steady steps");
  summary_->horizontalHeaderItem(6)->setToolTip("What the compile warm-up took");
  summary_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  summary_->verticalHeader()->setVisible(false);
  summary_->horizontalHeader()->setStretchLastSection(true);
  summary_->setMaximumHeight(100);
  comparison_->setWordWrap(true);
  comparison_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(table_, 1);
  for (QPushButton* b : {showSelected, compare, openButton, clearButton}) leftLayout->addWidget(b);

  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addWidget(comparison_);
  rightLayout->addWidget(plot_, 1);
  rightLayout->addWidget(summary_);

  splitter_ = new QSplitter(this);
  splitter_->addWidget(left);
  splitter_->addWidget(right);
  splitter_->setStretchFactor(1, 1);
  connect(splitter_, &QSplitter::splitterMoved, this, [this] { splitterMoved_ = true; });
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(splitter_);

  connect(openButton, &QPushButton::clicked, this, [this] { openDialog(false); });
  connect(showSelected, &QPushButton::clicked, this, [this] {
    const QStringList runs = selectedRuns();
    QString error;
    for (int i = 0; i < runs.size(); ++i)
      if (!showRun(runs[i], i > 0, &error)) QMessageBox::warning(this, "Runs", error);
  });
  connect(compare, &QPushButton::clicked, this, [this] {
    QString error;
    if (!compareEagerVsCompile(&error)) QMessageBox::information(this, "Compare eager vs compile", error);
  });
  connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row) {
    QString error;
    if (row < listed_.size() && !showRun(listed_[row].folder(), false, &error)) QMessageBox::warning(this, "Runs", error);
  });
  connect(clearButton, &QPushButton::clicked, this, &RunsPanel::clearPlot);

  recent_ = QSettings().value("runs/recent").toStringList();
  refreshList();
}

void RunsPanel::openDialog(bool overlay) {
  const QString dir = QFileDialog::getExistingDirectory(this, "A run's output folder", root_);
  if (dir.isEmpty()) return;
  QString error;
  if (!showRun(dir, overlay, &error)) QMessageBox::warning(this, "Runs", error);
}

void RunsPanel::setRunsRoot(const QString& dir) {
  if (dir == root_) return;
  root_ = dir;
  refreshList();
}

// The recent runs and every folder under the root holding a metrics log (the root itself too: a run
// written straight into it), read again from disk.
void RunsPanel::refreshList() {
  QStringList folders = recent_;
  if (!root_.isEmpty()) {
    const QDir root(root_);
    if (QFileInfo(metricsFileOf(root_)).isFile()) folders << root.absolutePath();
    for (const QFileInfo& sub : root.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot))
      if (QFileInfo(sub.absoluteFilePath() + "/logs/metrics.jsonl").isFile()) folders << sub.absoluteFilePath();
  }
  folders.removeDuplicates();
  const QStringList selected = selectedRuns();
  listed_.clear();
  for (const QString& folder : folders) {
    if (!QFileInfo(metricsFileOf(folder)).isFile()) continue;
    listed_.push_back(readRunLog(folder));
  }
  std::sort(listed_.begin(), listed_.end(), newerFirst);
  table_->setRowCount(int(listed_.size()));
  for (int row = 0; row < listed_.size(); ++row) {
    const RunLog& log = listed_[row];
    const QStringList cells = {QDir(log.folder()).dirName(),
                               log.recipe.isEmpty() ? "–" : log.recipe,
                               log.compiled ? "compile" : "eager",
                               log.started.isValid() ? log.started.toLocalTime().toString("yyyy-MM-dd HH:mm") : "–",
                               runStatusText(log),
                               QString::number(log.steps.size()),
                               log.steps.empty() ? "–" : QString::number(log.steps.back().loss, 'f', 4)};
    for (int c = 0; c < kColumns; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(log.folder());
      table_->setItem(row, c, item);
    }
  }
  table_->resizeColumnsToContents();
  fitRunsList();
  selectRuns(selected);
}

// The list gets the width its columns need (Recipe, Status and Final loss were hidden even at 1920 px),
// up to two thirds of the tab; the plot takes the rest.
namespace {
// What a column's cells and header need to be read whole (the text and a cell's margins).
int contentWidth(const QTableWidget* table, int column) {
  int widest = table->horizontalHeader()->sectionSizeHint(column);
  for (int row = 0; row < table->rowCount(); ++row)
    if (const QTableWidgetItem* item = table->item(row, column))
      widest = std::max(widest, table->fontMetrics().horizontalAdvance(item->text()) + 16);
  return widest;
}
}  // namespace

void RunsPanel::fitRunsList() {
  if (splitterMoved_) return;
  int need = 2 * table_->frameWidth() + table_->verticalScrollBar()->sizeHint().width() + 8;
  for (int c = 0; c < table_->columnCount(); ++c) need += contentWidth(table_, c);
  const int total = std::max(splitter_->width(), 600);
  const int left = std::min(need, total * 2 / 3);
  splitter_->setSizes({left, std::max(200, total - left)});
}

// The columns are sized to their contents: one out of view is one the list must scroll to.
bool RunsPanel::runsColumnsInView() const { return table_->horizontalScrollBar()->maximum() == 0; }

void RunsPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // After the layout has given the splitter its new size (it shares out the change itself first).
  QTimer::singleShot(0, this, &RunsPanel::fitRunsList);
}

QStringList RunsPanel::listedRuns() const {
  QStringList out;
  for (const RunLog& log : listed_) out << log.folder();
  return out;
}

QStringList RunsPanel::selectedRuns() const {
  QStringList out;
  if (!table_->selectionModel()) return out;
  QList<int> rows;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows()) rows << index.row();
  std::sort(rows.begin(), rows.end());
  for (int row : rows)
    if (row < listed_.size()) out << listed_[row].folder();
  return out;
}

void RunsPanel::selectRuns(const QStringList& folders) {
  table_->clearSelection();
  for (int row = 0; row < listed_.size(); ++row)
    if (folders.contains(listed_[row].folder()))
      table_->selectionModel()->select(table_->model()->index(row, 0),
                                       QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

bool RunsPanel::showRun(const QString& path, bool overlay, QString* error) {
  RunLog log = readRunLog(path);
  if (log.steps.empty()) {
    if (error) *error = log.errors.isEmpty() ? log.path + ": no steps logged yet" : log.errors.join('\n');
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
  if (!recent_.contains(log.folder()) && !listedRuns().contains(log.folder())) {
    addRecentRun(log.folder());
  }
  updateSummary();
  return true;
}

bool RunsPanel::compareEagerVsCompile(QString* error) {
  QStringList pair = selectedRuns();
  if (pair.size() != 2) {
    pair.clear();
    // The newest compiled run, and the newest eager run of its setup.
    for (const RunLog& c : listed_) {
      if (!c.compiled || c.setup.isEmpty()) continue;
      const auto eager = std::find_if(listed_.begin(), listed_.end(),
                                      [&](const RunLog& e) { return !e.compiled && e.setup == c.setup; });
      if (eager == listed_.end()) continue;
      pair = {eager->folder(), c.folder()};
      break;
    }
  }
  if (pair.size() != 2) {
    if (error) *error = "No compiled run has an eager run of the same setup here: run the setup once with compile "
                        "off and once with it on (or select two runs).";
    return false;
  }
  QString why;
  if (!showRun(pair[0], false, &why) || !showRun(pair[1], true, &why)) {
    if (error) *error = why;
    return false;
  }
  selectRuns(pair);
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
  refreshList();
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
                               runStatusText(log)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == 0) item->setToolTip(cells[c]);
      summary_->setItem(row, c, item);
    }
  }
  summary_->resizeColumnsToContents();
  summary_->setColumnWidth(0, std::min(summary_->columnWidth(0), 240));  // the folder names are long: elided
  comparison_->clear();
  if (shown_.size() != 2) return;
  // Compiled against eager whichever was picked first; two of a kind: the newer against the older.
  const RunLog& a = shown_[0];
  const RunLog& b = shown_[1];
  if (a.compiled != b.compiled) {
    comparison_->setText(a.compiled ? compareRuns(b, a) : compareRuns(a, b));
  } else if (a.medianSteadyTokensPerSecond() > 0 && b.medianSteadyTokensPerSecond() > 0) {
    const RunLog& newer = newerFirst(a, b) ? a : b;
    const RunLog& older = &newer == &a ? b : a;
    comparison_->setText(QString("%1 vs %2: %3x steady tokens/s")
                             .arg(runLabel(newer), runLabel(older))
                             .arg(newer.medianSteadyTokensPerSecond() / older.medianSteadyTokensPerSecond(), 0, 'f', 2));
  }
}

}  // namespace tb::ui
