// The YAML of the setup in a YamlEditor. Typing is parsed and validated ~300 ms after the last key
// (tb::config::load_text: the messages of `tunebench-cli validate`), errors are marked at their line
// and column; form edits replace the text. Open, Save, Save As (atomic), the bundled configs, and
// "Copy CLI command".
#pragma once

#include <QWidget>

#include "ConfigDocument.h"

class QComboBox;
class QLabel;
class QListWidget;
class QTimer;

namespace tb::ui {

class YamlEditor;

class ConfigEditorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigEditorPanel(ConfigDocument* document, QWidget* parent = nullptr);

  YamlEditor* editor() const { return editor_; }
  QListWidget* problemList() const { return problems_; }
  int debounceMs() const;
  // The diagnostics of the last validation, formatted (`file:line:col: message`).
  QStringList problems() const { return problemTexts_; }
  bool isValid() const { return problemTexts_.isEmpty(); }

  // The actions behind the buttons, without dialogs (tests, menu).
  bool openFile(const QString& path, QString* error = nullptr);
  bool saveTo(const QString& path, QString* error = nullptr);
  QString copyCliCommand();  // also puts it on the clipboard
  void validateNow();        // flushes a pending text edit and validates

 public Q_SLOTS:
  void open();
  bool save();
  bool saveAs();

 Q_SIGNALS:
  void validated(bool ok, int problemCount);
  void statusMessage(const QString& message);

 private:
  void onTextEdited();
  void onDocumentChanged(ConfigDocument::Origin origin);
  void fillBundled();
  void updateTitle();
  bool confirmDiscard();

  ConfigDocument* doc_;
  YamlEditor* editor_;
  QComboBox* bundled_;
  QLabel* fileLabel_;
  QLabel* status_;
  QLabel* command_;
  QListWidget* problems_;
  QTimer* debounce_;
  QStringList problemTexts_;
  bool settingText_ = false;
};

}  // namespace tb::ui
