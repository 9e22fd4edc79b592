// "Models on this computer" on the Setup tab: every model repo in the shared Hugging Face cache that
// Tunebench can train (whoever downloaded it), recognised from its config.json: family, parameters, size
// on disk, commit. Open (or a double click) opens one; repos it cannot train are counted, not listed.
#pragma once

#include "CachedReposDialog.h"

namespace tb::ui {

class LocalModelsDialog : public CachedReposDialog {
  Q_OBJECT
 public:
  explicit LocalModelsDialog(QWidget* parent = nullptr);

  QPushButton* openButton() const { return actionButton(); }
  QString folder() const { return chosen(); }  // the one opened
};

}  // namespace tb::ui
