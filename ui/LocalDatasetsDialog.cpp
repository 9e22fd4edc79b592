#include "LocalDatasetsDialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ModelInfo.h"
#include "hub/cache.h"
#include "hub/cached_models.h"

namespace tb::ui {

namespace {
enum Column { Repo, Size, Commit, Columns };
}  // namespace

LocalDatasetsDialog::LocalDatasetsDialog(QWidget* parent)
    : QDialog(parent), table_(new QTableWidget(this)), note_(new QLabel(this)), use_(new QPushButton("Use", this)) {
  setWindowTitle("Datasets on this computer");
  table_->setColumnCount(Columns);
  table_->setHorizontalHeaderLabels({"Repo", "Size on disk", "Commit"});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(Repo, QHeaderView::Stretch);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(use_, QDialogButtonBox::AcceptRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(table_);
  layout->addWidget(note_);
  layout->addWidget(buttons);
  resize(640, 360);
  const auto useSelected = [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    repo_ = table_->item(rows.first().row(), Repo)->text();
    accept();
  };
  connect(use_, &QPushButton::clicked, this, useSelected);
  connect(table_, &QTableWidget::cellDoubleClicked, this, useSelected);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(table_, &QTableWidget::itemSelectionChanged, this,
          [this] { use_->setEnabled(!table_->selectionModel()->selectedRows().isEmpty()); });
  fill();
}

void LocalDatasetsDialog::fill() {
  for (const auto& d : tb::hub::cached_datasets()) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* repo = new QTableWidgetItem(QString::fromStdString(d.repo_id));
    repo->setToolTip(QString::fromStdString(d.folder));
    table_->setItem(row, Repo, repo);
    table_->setItem(row, Size, new QTableWidgetItem(formatBytes(double(d.bytes))));
    table_->setItem(row, Commit, new QTableWidgetItem(QString::fromStdString(d.commit.substr(0, 7))));
  }
  QString text = QString("%1 dataset%2 in %3").arg(table_->rowCount()).arg(table_->rowCount() == 1 ? "" : "s")
                     .arg(QString::fromStdString(tb::hub::hub_cache_dir()));
  if (table_->rowCount() == 0) text += ". \"From the Hub…\" fetches one.";
  note_->setText(text);
  if (table_->rowCount() > 0) table_->selectRow(0);
  use_->setEnabled(table_->rowCount() > 0);
}

}  // namespace tb::ui
