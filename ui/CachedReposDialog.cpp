#include "CachedReposDialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace tb::ui {

CachedReposDialog::CachedReposDialog(const QString& title, const QStringList& headers, const QString& action, QWidget* parent)
    : QDialog(parent), table_(new QTableWidget(this)), note_(new QLabel(this)), action_(new QPushButton(action, this)) {
  setWindowTitle(title);
  table_->setColumnCount(int(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(action_, QDialogButtonBox::AcceptRole);
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(table_);
  layout->addWidget(note_);
  layout->addWidget(buttons);
  resize(760, 380);
  const auto chooseSelected = [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    chosen_ = table_->item(rows.first().row(), 0)->data(Qt::UserRole).toString();
    accept();
  };
  connect(action_, &QPushButton::clicked, this, chooseSelected);
  connect(table_, &QTableWidget::cellDoubleClicked, this, chooseSelected);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(table_, &QTableWidget::itemSelectionChanged, this,
          [this] { action_->setEnabled(!table_->selectionModel()->selectedRows().isEmpty()); });
}

void CachedReposDialog::finishFill(const QString& note) {
  table_->setSortingEnabled(true);
  table_->sortByColumn(0, Qt::AscendingOrder);
  note_->setText(note);
  if (table_->rowCount() > 0) table_->selectRow(0);
  action_->setEnabled(table_->rowCount() > 0);
}

}  // namespace tb::ui
