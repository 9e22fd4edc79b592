#include "LocalModelsDialog.h"

#include <QTableWidget>

#include "ModelInfo.h"
#include "checkpoint/hf_config.h"
#include "hub/cache.h"
#include "hub/cached_models.h"

namespace tb::ui {

namespace {

enum Column { Repo, Family, Parameters, Size, Commit };

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
    : CachedReposDialog("Models on this computer", {"Repo", "Family", "Parameters", "Size on disk", "Commit"}, "Open", parent) {
  QTableWidget* t = table();
  int untrainable = 0;
  for (const auto& m : tb::hub::cached_models()) {
    tb::models::ModelArgs args;
    try {
      args = tb::checkpoint::read_hf_model_args(m.folder);
    } catch (const std::exception&) {
      ++untrainable;  // another architecture, or a config.json Tunebench does not read
      continue;
    }
    const int row = t->rowCount();
    t->insertRow(row);
    auto* repo = new QTableWidgetItem(QString::fromStdString(m.repo_id));
    repo->setData(Qt::UserRole, QString::fromStdString(m.folder));
    repo->setToolTip(QString::fromStdString(m.folder));
    t->setItem(row, Repo, repo);
    t->setItem(row, Family, new QTableWidgetItem(familyLabel(args.family)));
    const int64_t params = args.parameter_count();
    t->setItem(row, Parameters, new NumberItem(formatCount(params), double(params)));
    t->setItem(row, Size, new NumberItem(formatBytes(double(m.bytes)), double(m.bytes)));
    t->setItem(row, Commit, new QTableWidgetItem(QString::fromStdString(m.commit.substr(0, 7))));
  }
  QString text = QString("%1 model%2 in %3").arg(t->rowCount()).arg(t->rowCount() == 1 ? "" : "s")
                     .arg(QString::fromStdString(tb::hub::hub_cache_dir()));
  if (untrainable > 0) text += QString("; Tunebench does not train %1 other repo%2 there").arg(untrainable).arg(untrainable == 1 ? "" : "s");
  if (t->rowCount() == 0) text += ". \"Get model…\" downloads one.";
  finishFill(text);
}

}  // namespace tb::ui
