// The config being set up: its YAML text (what the editor shows, comments kept) and the raw YAML tree
// (before interpolation) that the run-setup form reads and edits. Both views stay in sync:
//  - a form edit changes the tree and then the text, patched in place where it can be (so comments and
//    layout survive), else regenerated from the tree (config/yaml_edit.h does both);
//  - a text edit is parsed and, when it parses, replaces the tree.
// changed(origin) tells each view whether it has to refresh. Torch-free: yaml-cpp and the config API only.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace tb::ui {

enum class RecipeKind { Full, Lora, Qlora };
// The recipe that runs a kind: full_finetune_single_device or lora_finetune_single_device (QLoRA is
// the LoRA recipe with a quantized base, as in torchtune).
QString recipeNameFor(RecipeKind kind);
QString recipeKindLabel(RecipeKind kind);  // "Full fine-tune", "LoRA", "QLoRA"

// One change to the tree: set `path` (dotted, e.g. optimizer.lr) to `value`, or remove it.
struct ConfigEdit {
  QString path;
  YAML::Node value;
  bool remove = false;
  static ConfigEdit set(const QString& path, const YAML::Node& value) { return {path, value, false}; }
  static ConfigEdit scalar(const QString& path, const QString& yamlText);  // plain YAML scalar text
  static ConfigEdit erase(const QString& path) { return {path, YAML::Node(), true}; }
};

class ConfigDocument : public QObject {
  Q_OBJECT
 public:
  enum class Origin { Load, Form, Text };
  Q_ENUM(Origin)
  explicit ConfigDocument(QObject* parent = nullptr);

  // ---- loading and saving ---------------------------------------------------------------------------
  // A bundled config by name (tiny/full_single_device): becomes the base of the CLI command.
  bool loadBundled(const QString& name, QString* error = nullptr);
  bool loadFile(const QString& path, QString* error = nullptr);
  // Text that came from elsewhere (QSettings); `baseArg` is what `--config` names for it, may be empty.
  void loadText(const QString& text, const QString& filePath, const QString& bundledName);
  // Atomic writes (QSaveFile): the file is either the old one or the complete new one.
  bool save(QString* error = nullptr);
  bool saveAs(const QString& path, QString* error = nullptr);

  QString filePath() const { return filePath_; }        // the user's file, empty when not saved yet
  QString bundledName() const { return bundledName_; }  // set when it came from a bundled config
  // What validation messages name: the file path, else "<bundled name>.yaml", else "untitled.yaml".
  QString displayName() const;
  bool isModified() const { return modified_; }

  // ---- text ---------------------------------------------------------------------------------------
  QString text() const { return text_; }
  void setText(const QString& text, Origin origin = Origin::Text);
  bool parses() const { return parseError_.isEmpty(); }
  QString parseError() const { return parseError_; }

  // ---- tree ---------------------------------------------------------------------------------------
  const YAML::Node& tree() const { return tree_; }
  YAML::Node value(const QString& dotted) const;  // invalid (IsDefined() false) when absent
  QString scalar(const QString& dotted, const QString& fallback = {}) const;
  // A file or folder the config names (model.path, checkpointer.checkpoint_dir) as the engine opens it:
  // from the working folder, else from the share folder, where a bundled config's `resources/...` are.
  QString inputPath(const QString& dotted) const;
  bool boolean(const QString& dotted, bool fallback) const;
  void apply(const QVector<ConfigEdit>& edits);  // a form change: tree, then text; one changed(Form)
  void setScalar(const QString& dotted, const QString& yamlText) { apply({ConfigEdit::scalar(dotted, yamlText)}); }

  RecipeKind recipeKind() const;
  void setRecipeKind(RecipeKind kind);
  QString recipe() const { return recipeNameFor(recipeKind()); }
  // The model preset without lora_/qlora_ prefix or namespace (llama2_stories15m), or the component.
  QString modelBaseName() const;
  // Switches the preset, keeping the recipe kind and the LoRA settings.
  void setModelPreset(const QString& presetName);

  // ---- validation and the command line ---------------------------------------------------------
  // Exactly what `tunebench-cli validate <file> --recipe <recipe>` checks, on the editor's text.
  tb::config::LoadResult validate(const std::vector<std::string>& overrides = {}) const;
  // `k=v` / `~k` overrides that turn the base config (bundled or saved file) into the current tree.
  QStringList cliOverrides() const;
  // `tunebench-cli run <recipe> --config <base> k=v ...`; `note` says when the config must be saved first.
  QString cliCommand(QString* note = nullptr) const;
  QString cliConfigArg() const;

 Q_SIGNALS:
  void changed(tb::ui::ConfigDocument::Origin origin);
  void fileStateChanged();

 private:
  void resetTo(const QString& text, const QString& filePath, const QString& bundledName);
  void setModified(bool modified);

  QString text_;
  YAML::Node tree_;
  YAML::Node baseTree_;  // the tree of the base the CLI command starts from
  QString parseError_;
  QString filePath_;
  QString bundledName_;
  bool modified_ = false;
};

// `arg` quoted for a POSIX shell where it needs quoting.
QString shellQuote(const QString& arg);

}  // namespace tb::ui
