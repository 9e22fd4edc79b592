#include "LocalModelsDialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ModelInfo.h"
#include "checkpoint/hf_config.h"
#include "hub/cache.h"
#include "hub/cached_models.h"

namespace tb::ui {

namespace {

enum Column { Repo, Family, Parameters, Size, Commit, Columns };

// Sorts by the number it holds, not its text ("9.5 M" before "1.2 B").
class NumberItem : public QTableWidgetItem {
 public:
  NumberItem(const QString& text, double value) : QTableWidgetItem(text) { setData(Qt::UserRole + 1, value); }
  bool operator<(const QTableWidgetItem& other) const override {
    return data(Qt::UserRole + 1).toDouble() < other.data(Qt::UserRole + 1).toDouble();
  }
};

}  // namespace

LocalModelsDialog::LocalModelsDialog(QWidget* parent)
    : QDialog(parent), table_(new QTableWidget(this)), note_(new QLabel(this)), open_(new QPushButton("Open", this)) {
  setWindowTitle("Models on this computer");
  table_->setColumnCount(Columns);
  table_->setHorizontalHeaderLabels({"Repo", "Family", "Parameters", "Size on disk", "Commit"});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(Repo, QHeaderView::Stretch);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(open_, QDialogButtonBox::AcceptRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(table_);
  layout->addWidget(note_);
  layout->addWidget(buttons);
  resize(760, 380);
  const auto openSelected = [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    folder_ = table_->item(rows.first().row(), Repo)->data(Qt::UserRole).toString();
    accept();
  };
  connect(open_, &QPushButton::clicked, this, openSelected);
  connect(table_, &QTableWidget::cellDoubleClicked, this, openSelected);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(table_, &QTableWidget::itemSelectionChanged, this,
          [this] { open_->setEnabled(!table_->selectionModel()->selectedRows().isEmpty()); });
  fill();
}

void LocalModelsDialog::fill() {
  table_->setSortingEnabled(false);
  int untrainable = 0;
  for (const auto& m : tb::hub::cached_models()) {
    tb::models::ModelArgs args;
    try {
      args = tb::checkpoint::read_hf_model_args(m.folder);
    } catch (const std::exception&) {
      ++untrainable;  // another architecture, or a config.json Tunebench does not read
      continue;
    }
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* repo = new QTableWidgetItem(QString::fromStdString(m.repo_id));
    repo->setData(Qt::UserRole, QString::fromStdString(m.folder));
    repo->setToolTip(QString::fromStdString(m.folder));
    table_->setItem(row, Repo, repo);
    table_->setItem(row, Family, new QTableWidgetItem(familyLabel(args.family)));
    const int64_t params = args.parameter_count();
    table_->setItem(row, Parameters, new NumberItem(formatCount(params), double(params)));
    table_->setItem(row, Size, new NumberItem(formatBytes(double(m.bytes)), double(m.bytes)));
    table_->setItem(row, Commit, new QTableWidgetItem(QString::fromStdString(m.commit.substr(0, 7))));
  }
  table_->setSortingEnabled(true);
  table_->sortByColumn(Repo, Qt::AscendingOrder);
  QString text = QString("%1 model%2 in %3").arg(table_->rowCount()).arg(table_->rowCount() == 1 ? "" : "s")
                     .arg(QString::fromStdString(tb::hub::hub_cache_dir()));
  if (untrainable > 0) text += QString("; Tunebench does not train %1 other repo%2 there").arg(untrainable).arg(untrainable == 1 ? "" : "s");
  if (table_->rowCount() == 0) text += ". \"Get model…\" downloads one.";
  note_->setText(text);
  if (table_->rowCount() > 0) table_->selectRow(0);
  open_->setEnabled(table_->rowCount() > 0);
}

}  // namespace tb::ui
