#include "LocalDatasetsDialog.h"

#include <QTableWidget>

#include "ModelInfo.h"
#include "hub/cache.h"
#include "hub/cached_models.h"

namespace tb::ui {

namespace {
enum Column { Repo, Size, Commit };
}  // namespace

LocalDatasetsDialog::LocalDatasetsDialog(QWidget* parent)
    : CachedReposDialog("Datasets on this computer", {"Repo", "Size on disk", "Commit"}, "Use", parent) {
  QTableWidget* t = table();
  for (const auto& d : tb::hub::cached_datasets()) {
    const int row = t->rowCount();
    t->insertRow(row);
    auto* repo = new QTableWidgetItem(QString::fromStdString(d.repo_id));
    repo->setData(Qt::UserRole, QString::fromStdString(d.repo_id));
    repo->setToolTip(QString::fromStdString(d.folder));
    t->setItem(row, Repo, repo);
    t->setItem(row, Size, new QTableWidgetItem(formatBytes(double(d.bytes))));
    t->setItem(row, Commit, new QTableWidgetItem(QString::fromStdString(d.commit.substr(0, 7))));
  }
  QString text = QString("%1 dataset%2 in %3").arg(t->rowCount()).arg(t->rowCount() == 1 ? "" : "s")
                     .arg(QString::fromStdString(tb::hub::hub_cache_dir()));
  if (t->rowCount() == 0) text += ". \"From the Hub…\" fetches one.";
  finishFill(text);
}

}  // namespace tb::ui
