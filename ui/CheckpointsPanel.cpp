#include "CheckpointsPanel.h"

#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include "ExportDialog.h"
#include "ModelInfo.h"

namespace tb::ui {

namespace {
enum Column { kName, kStep, kEpoch, kLoss, kRecipe, kCompile, kDtype, kSize, kTime, kStatus, kColumns };
}

CheckpointsPanel::CheckpointsPanel(QWidget* parent)
    : QWidget(parent), header_(new QLabel(this)), table_(new QTableWidget(0, kColumns, this)),
      reload_(new QPushButton("Reload (resume training)", this)),
      newRun_(new QPushButton("Start new run from these weights", this)), openFolder_(new QPushButton("Open folder", this)),
      export_(new QPushButton("Export…", this)),
      watcher_(new QFileSystemWatcher(this)), refreshTimer_(new QTimer(this)) {
  table_->setHorizontalHeaderLabels(
      {"Checkpoint", "Step", "Epochs done", "Loss", "Recipe", "Compile", "dtype", "Size", "Written", "Status"});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  reload_->setToolTip("Continue this run from the selected checkpoint: weights, optimizer, schedule, data position");
  newRun_->setToolTip("A fresh fine-tune (step 1, new optimizer) that starts from the selected weights");
  table_->horizontalHeaderItem(kEpoch)->setToolTip("Epochs completed when it was saved: epoch_0 is saved at the end "
                                                   "of the first epoch, so it has 1");
  auto* refreshButton = new QPushButton("Refresh", this);
  auto* browse = new QPushButton("Open run folder…", this);
  browse->setObjectName("browseButton");
  browse->setToolTip("Show the checkpoints of another run");
  openFolder_->setToolTip("Open the selected checkpoint's folder (or the run's) in the file manager");
  refreshButton->setToolTip("Read the folder again");
  reload_->setObjectName("reloadButton");
  newRun_->setObjectName("newRunButton");
  openFolder_->setObjectName("openFolderButton");
  export_->setObjectName("exportButton");
  export_->setToolTip("Write the selected checkpoint as a GGUF file for llama.cpp, Ollama or LM Studio");

  // Two short rows (what to do with the selected checkpoint; which folder): narrow windows keep them whole.
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(reload_);
  buttons->addWidget(newRun_);
  buttons->addWidget(export_);
  buttons->addStretch(1);
  auto* folderButtons = new QHBoxLayout;
  folderButtons->addWidget(openFolder_);
  folderButtons->addWidget(browse);
  folderButtons->addStretch(1);
  folderButtons->addWidget(refreshButton);
  header_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(header_);
  layout->addWidget(table_, 1);
  layout->addLayout(buttons);
  layout->addLayout(folderButtons);

  refreshTimer_->setSingleShot(true);
  refreshTimer_->setInterval(400);
  connect(refreshTimer_, &QTimer::timeout, this, &CheckpointsPanel::refresh);
  connect(watcher_, &QFileSystemWatcher::directoryChanged, refreshTimer_, qOverload<>(&QTimer::start));
  connect(refreshButton, &QPushButton::clicked, this, &CheckpointsPanel::refresh);
  connect(table_, &QTableWidget::itemSelectionChanged, this, &CheckpointsPanel::updateButtons);
  connect(reload_, &QPushButton::clicked, this, [this] {
    if (const auto* e = selected()) Q_EMIT reloadRequested(*e);
  });
  connect(newRun_, &QPushButton::clicked, this, [this] {
    if (const auto* e = selected()) Q_EMIT newRunRequested(*e);
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    if (auto* dialog = openExport()) dialog->show();
  });
  connect(openFolder_, &QPushButton::clicked, this, [this] { QDesktopServices::openUrl(folderUrl()); });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "A run's output folder", outputDir_);
    if (!dir.isEmpty()) setOutputDir(dir);
  });
  refresh();
}

void CheckpointsPanel::setOutputDir(const QString& dir) {
  if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
  outputDir_ = dir;
  if (!dir.isEmpty() && QDir(dir).exists()) watcher_->addPath(dir);
  refresh();
}

void CheckpointsPanel::refresh() {
  const QString selectedPath = selected() ? selected()->path : QString();
  if (!outputDir_.isEmpty() && QDir(outputDir_).exists() && watcher_->directories().isEmpty())
    watcher_->addPath(outputDir_);
  entries_ = outputDir_.isEmpty() ? QVector<CheckpointEntry>() : scanCheckpoints(outputDir_);
  header_->setText(outputDir_.isEmpty() ? "No output folder yet."
                                        : QString("%1 checkpoint%2 in %3")
                                              .arg(entries_.size())
                                              .arg(entries_.size() == 1 ? "" : "s")
                                              .arg(outputDir_));
  table_->setRowCount(int(entries_.size()));
  for (int row = 0; row < entries_.size(); ++row) {
    const CheckpointEntry& e = entries_[row];
    auto set = [&](int column, const QString& text) {
      auto* item = new QTableWidgetItem(text);
      if (!e.complete) {
        item->setForeground(QColor(150, 150, 150));
        QFont f = item->font();
        f.setItalic(true);
        item->setFont(f);
      }
      if (column >= kStep && column <= kLoss) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(row, column, item);
    };
    set(kName, e.name);
    set(kStep, e.step >= 0 ? QString::number(e.step) : "–");
    set(kEpoch, e.epoch >= 0 ? QString::number(e.epoch) : "–");
    set(kLoss, e.hasLoss ? QString::number(e.loss, 'f', 4) : "–");
    set(kRecipe, e.recipe);
    set(kCompile, e.complete ? (e.compile ? "yes" : "no") : "");
    set(kDtype, e.dtype);
    set(kSize, formatBytes(double(e.sizeBytes)));
    set(kTime, e.time.toString("yyyy-MM-dd HH:mm:ss"));
    set(kStatus, e.complete ? "complete" : "incomplete (no manifest: being written or interrupted)");
    if (e.path == selectedPath) table_->selectRow(row);
  }
  // Nothing chosen yet: the newest complete checkpoint is (so Reload works on a run with one).
  if (!selected())
    for (int row = int(entries_.size()) - 1; row >= 0; --row)
      if (entries_[row].complete) {
        table_->selectRow(row);
        break;
      }
  table_->resizeColumnsToContents();
  updateButtons();
}

const CheckpointEntry* CheckpointsPanel::selected() const {
  const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList();
  if (rows.isEmpty()) return nullptr;
  const int row = rows.first().row();
  return row >= 0 && row < entries_.size() ? &entries_[row] : nullptr;
}

void CheckpointsPanel::select(int row) {
  table_->selectRow(row);
  updateButtons();
}

// Absolute: a relative file: URL means nothing to a file manager.
QUrl CheckpointsPanel::folderUrl() const {
  const auto* e = selected();
  return QUrl::fromLocalFile(QFileInfo(e ? e->path : outputDir_).absoluteFilePath());
}

ExportDialog* CheckpointsPanel::openExport() {
  const auto* e = selected();
  if (!e || !e->complete) return nullptr;
  auto* dialog = new ExportDialog(e->path, e->recipe.contains("lora"), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  return dialog;
}

void CheckpointsPanel::setRunActive(bool active) {
  runActive_ = active;
  updateButtons();
}

void CheckpointsPanel::updateButtons() {
  const auto* e = selected();
  const bool usable = e && e->complete && !runActive_;
  reload_->setEnabled(usable);
  newRun_->setEnabled(usable);
  export_->setEnabled(e && e->complete);
  openFolder_->setEnabled(e || !outputDir_.isEmpty());
}

}  // namespace tb::ui
