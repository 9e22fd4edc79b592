#include "ConfigEditorPanel.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTextBlock>
#include <QTimer>
#include <QVBoxLayout>

#include "YamlEditor.h"

namespace tb::ui {

namespace {
// yaml-cpp counts columns in bytes; the editor counts UTF-16 units.
int editorColumn(const QTextDocument* document, int line, int byteColumn) {
  const QTextBlock block = document->findBlockByNumber(line - 1);
  if (!block.isValid() || byteColumn <= 1) return std::max(1, byteColumn);
  const QByteArray utf8 = block.text().toUtf8();
  return int(QString::fromUtf8(utf8.left(byteColumn - 1)).size()) + 1;
}
}  // namespace

ConfigEditorPanel::ConfigEditorPanel(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), doc_(document), editor_(new YamlEditor(this)), bundled_(new QComboBox(this)),
      fileLabel_(new QLabel(this)), status_(new QLabel(this)), command_(new QLabel(this)),
      problems_(new QListWidget(this)), debounce_(new QTimer(this)) {
  auto* openButton = new QPushButton("Open…", this);
  auto* saveButton = new QPushButton("Save", this);
  auto* saveAsButton = new QPushButton("Save As…", this);
  auto* copyButton = new QPushButton("Copy CLI command", this);
  copyButton->setToolTip("The tunebench-cli run line for this setup: the base config plus key=value overrides");
  bundled_->setToolTip("The bundled configs");
  bundled_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  bundled_->setMinimumContentsLength(14);
  openButton->setToolTip("Open a YAML config (Ctrl+O)");
  saveButton->setToolTip("Save the config to its file (Ctrl+S)");
  saveAsButton->setToolTip("Save the config to a new file");
  fillBundled();

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Bundled:", this));
  bar->addWidget(bundled_, 1);
  bar->addWidget(openButton);
  bar->addWidget(saveButton);
  bar->addWidget(saveAsButton);
  bar->addWidget(copyButton);

  command_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  command_->setWordWrap(true);
  QFont mono("monospace");
  mono.setStyleHint(QFont::TypeWriter);
  command_->setFont(mono);
  problems_->setFont(mono);
  problems_->setMaximumHeight(110);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(editor_);
  splitter->addWidget(problems_);
  splitter->setStretchFactor(0, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  auto* info = new QHBoxLayout;
  info->addWidget(fileLabel_, 1);
  info->addWidget(status_);
  layout->addLayout(info);
  layout->addWidget(splitter, 1);
  layout->addWidget(command_);

  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, [this] {
    settingText_ = true;
    doc_->setText(editor_->toPlainText(), ConfigDocument::Origin::Text);
    settingText_ = false;
  });
  connect(editor_, &QPlainTextEdit::textChanged, this, &ConfigEditorPanel::onTextEdited);
  connect(doc_, &ConfigDocument::changed, this, &ConfigEditorPanel::onDocumentChanged);
  connect(doc_, &ConfigDocument::fileStateChanged, this, &ConfigEditorPanel::updateTitle);
  connect(openButton, &QPushButton::clicked, this, &ConfigEditorPanel::open);
  connect(saveButton, &QPushButton::clicked, this, &ConfigEditorPanel::save);
  connect(saveAsButton, &QPushButton::clicked, this, &ConfigEditorPanel::saveAs);
  connect(copyButton, &QPushButton::clicked, this, [this] {
    copyCliCommand();
  });
  connect(bundled_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
    const QString name = bundled_->itemData(index).toString();
    if (name.isEmpty() || !confirmDiscard()) return;
    QString error;
    if (!doc_->loadBundled(name, &error)) QMessageBox::warning(this, "Bundled config", error);
  });
  connect(problems_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
    editor_->goToLine(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
  });
  onDocumentChanged(ConfigDocument::Origin::Load);
}

int ConfigEditorPanel::debounceMs() const { return debounce_->interval(); }

void ConfigEditorPanel::fillBundled() {
  bundled_->clear();
  bundled_->addItem("(choose a bundled config)", QString());
  for (const auto& b : tb::config::bundled_configs())
    bundled_->addItem(QString::fromStdString(b.name), QString::fromStdString(b.name));
}

void ConfigEditorPanel::onTextEdited() {
  if (settingText_) return;
  debounce_->start();  // restarts: parse once typing pauses
}

void ConfigEditorPanel::onDocumentChanged(ConfigDocument::Origin origin) {
  if (origin != ConfigDocument::Origin::Text && editor_->toPlainText() != doc_->text()) {
    settingText_ = true;
    if (origin == ConfigDocument::Origin::Load)
      editor_->setPlainText(doc_->text());
    else
      editor_->replaceTextKeepingView(doc_->text());
    settingText_ = false;
  }
  validateNow();
  updateTitle();
}

void ConfigEditorPanel::validateNow() {
  if (debounce_->isActive()) {
    debounce_->stop();
    settingText_ = true;
    doc_->setText(editor_->toPlainText(), ConfigDocument::Origin::Text);
    settingText_ = false;
  }
  const auto result = doc_->validate();
  QList<EditorMark> marks;
  problemTexts_.clear();
  problems_->clear();
  const std::string shown = doc_->displayName().toStdString();
  for (const auto& d : result.diagnostics) {
    const QString text = QString::fromStdString(d.format());
    problemTexts_ << text;
    auto* item = new QListWidgetItem(text, problems_);
    if (d.line > 0 && d.file == shown) {
      const int column = editorColumn(editor_->document(), d.line, d.column);
      marks << EditorMark{d.line, column, QString::fromStdString(d.message)};
      item->setData(Qt::UserRole, d.line);
      item->setData(Qt::UserRole + 1, column);
    }
  }
  editor_->setMarks(marks);
  const bool ok = result.ok();
  status_->setText(ok ? "<span style='color:#2e7d32'>✓ valid</span>"
                      : QString("<span style='color:#c62828'>%1 problem%2</span>")
                            .arg(problemTexts_.size())
                            .arg(problemTexts_.size() == 1 ? "" : "s"));
  const bool opening = !ok && problems_->isHidden();
  problems_->setVisible(!ok);
  // The problems panel takes height from the editor: the line being edited stays in view.
  if (opening) QTimer::singleShot(0, editor_, [editor = editor_] { editor->ensureCursorVisible(); });
  QString note;
  const QString cli = doc_->cliCommand(&note);
  command_->setText(note.isEmpty() ? cli : cli + "\n(" + note + ")");
  Q_EMIT validated(ok, int(problemTexts_.size()));
}

void ConfigEditorPanel::updateTitle() {
  fileLabel_->setText(doc_->displayName() + (doc_->isModified() ? "  (modified)" : ""));
}

bool ConfigEditorPanel::confirmDiscard() {
  if (!doc_->isModified() || !isVisible()) return true;
  return QMessageBox::question(this, "Discard changes?",
                               "The config has unsaved changes. Replace it anyway?") == QMessageBox::Yes;
}

bool ConfigEditorPanel::openFile(const QString& path, QString* error) { return doc_->loadFile(path, error); }

bool ConfigEditorPanel::saveTo(const QString& path, QString* error) {
  validateNow();
  if (!doc_->saveAs(path, error)) return false;
  Q_EMIT statusMessage("Saved " + path);
  validateNow();  // the display name changed
  return true;
}

void ConfigEditorPanel::open() {
  if (!confirmDiscard()) return;
  const QString path = QFileDialog::getOpenFileName(this, "Open config", {}, "YAML (*.yaml *.yml);;All files (*)");
  if (path.isEmpty()) return;
  QString error;
  if (!openFile(path, &error)) QMessageBox::warning(this, "Open config", error);
}

bool ConfigEditorPanel::save() {
  if (doc_->filePath().isEmpty()) return saveAs();
  QString error;
  if (!saveTo(doc_->filePath(), &error)) {
    QMessageBox::warning(this, "Save config", error);
    return false;
  }
  return true;
}

bool ConfigEditorPanel::saveAs() {
  // A bundled config (or a new one) is offered a name in the home folder, never beside the bundled files.
  const QString suggested =
      doc_->filePath().isEmpty() ? QDir::home().filePath(QFileInfo(doc_->displayName()).fileName()) : doc_->filePath();
  const QString path = QFileDialog::getSaveFileName(this, "Save config as", suggested, "YAML (*.yaml *.yml)");
  if (path.isEmpty()) return false;
  QString error;
  if (!saveTo(path, &error)) {
    QMessageBox::warning(this, "Save config", error);
    return false;
  }
  return true;
}

QString ConfigEditorPanel::copyCliCommand() {
  validateNow();
  QString note;
  const QString cli = doc_->cliCommand(&note);
  QApplication::clipboard()->setText(cli);
  Q_EMIT statusMessage(note.isEmpty() ? "Copied: " + cli : "Copied (" + note + ")");
  return cli;
}

}  // namespace tb::ui
