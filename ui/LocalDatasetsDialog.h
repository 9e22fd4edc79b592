// The dataset box's "Datasets on this computer…": every dataset repo in the shared Hugging Face cache
// (whoever downloaded it: Tunebench, Hugging Face datasets, huggingface-cli), with its size on disk and
// commit. Use (or a double click) closes with repo() chosen.
#pragma once

#include "CachedReposDialog.h"

namespace tb::ui {

class LocalDatasetsDialog : public CachedReposDialog {
  Q_OBJECT
 public:
  explicit LocalDatasetsDialog(QWidget* parent = nullptr);

  QPushButton* useButton() const { return actionButton(); }
  QString repo() const { return chosen(); }  // the one chosen
};

}  // namespace tb::ui
