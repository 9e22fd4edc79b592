#include "ConfigDocument.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <map>

#include "checkpoint/atomic_file.h"
#include "checkpoint/hf_config.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/overrides.h"
#include "config/registry.h"
#include "config/yaml_edit.h"
#include "models/model_args.h"

namespace tb::ui {

QString recipeNameFor(RecipeKind kind) {
  return kind == RecipeKind::Full ? "full_finetune_single_device" : "lora_finetune_single_device";
}

QString recipeKindLabel(RecipeKind kind) {
  switch (kind) {
    case RecipeKind::Full: return "Full fine-tune";
    case RecipeKind::Lora: return "LoRA";
    case RecipeKind::Qlora: return "QLoRA";
  }
  return {};
}

// The value as an override's right-hand side reads it (config/overrides.h); text that is not valid YAML
// is the string it says.
ConfigEdit ConfigEdit::scalar(const QString& path, const QString& yamlText) {
  try {
    return {path, tb::config::override_value(yamlText.toStdString()), false};
  } catch (const std::invalid_argument&) {
    return {path, YAML::Node(yamlText.toStdString()), false};
  }
}

QString shellQuote(const QString& arg) {
  static const QRegularExpression safe(R"(^[A-Za-z0-9_./=:,+@%-]+$)");
  if (!arg.isEmpty() && safe.match(arg).hasMatch()) return arg;
  QString quoted = arg;
  quoted.replace('\'', "'\\''");
  return "'" + quoted + "'";
}

// ---- the document ---------------------------------------------------------------------------------------

ConfigDocument::ConfigDocument(QObject* parent) : QObject(parent), tree_(YAML::NodeType::Map) {}

QString ConfigDocument::displayName() const {
  if (!filePath_.isEmpty()) return filePath_;
  if (!bundledName_.isEmpty()) return bundledName_ + ".yaml";
  return "untitled.yaml";
}

void ConfigDocument::setModified(bool modified) {
  if (modified_ == modified) return;
  modified_ = modified;
  Q_EMIT fileStateChanged();
}

void ConfigDocument::resetTo(const QString& text, const QString& filePath, const QString& bundledName) {
  filePath_ = filePath;
  bundledName_ = bundledName;
  text_ = text;
  parseError_.clear();
  try {
    YAML::Node parsed = YAML::Load(text.toStdString());
    tree_.reset(parsed.IsMap() ? parsed : YAML::Node(YAML::NodeType::Map));
  } catch (const YAML::Exception& e) {
    parseError_ = QString::fromStdString(e.what());
    tree_.reset(YAML::Node(YAML::NodeType::Map));
  }
  baseTree_.reset(YAML::Clone(tree_));
  modified_ = false;
  Q_EMIT fileStateChanged();
  Q_EMIT changed(Origin::Load);
}

static bool readText(const QString& path, QString* text, QString* error) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
    if (error) *error = path + ": " + file.errorString();
    return false;
  }
  *text = QString::fromUtf8(file.readAll());
  return true;
}

bool ConfigDocument::loadBundled(const QString& name, QString* error) {
  const std::string path = tb::config::find_config(name.toStdString());
  if (path.empty()) {
    if (error) *error = "no bundled config named '" + name + "'";
    return false;
  }
  QString text;
  if (!readText(QString::fromStdString(path), &text, error)) return false;
  QString bundled = name;
  if (bundled.endsWith(".yaml")) bundled.chop(5);
  resetTo(text, {}, bundled);
  return true;
}

bool ConfigDocument::loadFile(const QString& path, QString* error) {
  QString text;
  if (!readText(path, &text, error)) return false;
  // A bundled config opened as a file is still the product's: read-only, "Save" asks for a new path.
  if (const std::string bundled = tb::config::bundled_config_name(path.toStdString()); !bundled.empty()) {
    resetTo(text, {}, QString::fromStdString(bundled));
    return true;
  }
  resetTo(text, QFileInfo(path).absoluteFilePath(), {});
  return true;
}

void ConfigDocument::loadText(const QString& text, const QString& filePath, const QString& bundledName) {
  resetTo(text, filePath, bundledName);
  // The text may differ from the file or bundled config it names: diff against that, not the text.
  QString base;
  if (!filePath.isEmpty() && readText(filePath, &base, nullptr)) {
    try {
      baseTree_.reset(YAML::Load(base.toStdString()));
    } catch (const YAML::Exception&) {
    }
  } else if (!bundledName.isEmpty()) {
    const std::string path = tb::config::find_config(bundledName.toStdString());
    if (!path.empty() && readText(QString::fromStdString(path), &base, nullptr)) {
      try {
        baseTree_.reset(YAML::Load(base.toStdString()));
      } catch (const YAML::Exception&) {
      }
    }
  }
  setModified(!tb::config::yaml_same(baseTree_, tree_) || base.isEmpty());
}

// Through the engine's atomic write (fsync, rename; a device, FIFO, link or folder is refused).
bool ConfigDocument::saveAs(const QString& path, QString* error) {
  try {
    tb::checkpoint::write_file_atomic(path.toStdString(), text_.toUtf8().toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  filePath_ = QFileInfo(path).absoluteFilePath();
  bundledName_.clear();
  baseTree_.reset(YAML::Clone(tree_));
  modified_ = true;  // force the signal below
  setModified(false);
  return true;
}

bool ConfigDocument::save(QString* error) {
  if (filePath_.isEmpty()) {
    if (error) *error = "the config has no file yet: use Save As";
    return false;
  }
  return saveAs(filePath_, error);
}

void ConfigDocument::setText(const QString& text, Origin origin) {
  if (text == text_ && parseError_.isEmpty()) return;
  text_ = text;
  try {
    YAML::Node parsed = YAML::Load(text.toStdString());
    parseError_.clear();
    tree_.reset(parsed.IsMap() ? parsed : YAML::Node(YAML::NodeType::Map));
  } catch (const YAML::Exception& e) {
    parseError_ = QString::fromStdString(e.what());  // the tree keeps its last good state
  }
  setModified(true);
  Q_EMIT changed(origin);
}

YAML::Node ConfigDocument::value(const QString& dotted) const {
  return tb::config::yaml_get(tree_, dotted.toStdString());
}

QString ConfigDocument::inputPath(const QString& dotted) const {
  return QString::fromStdString(tb::config::resolve_input_path(scalar(dotted).toStdString()));
}

QString ConfigDocument::scalar(const QString& dotted, const QString& fallback) const {
  const YAML::Node v = value(dotted);
  if (!v.IsDefined() || !v.IsScalar()) return fallback;
  return QString::fromStdString(v.Scalar());
}

bool ConfigDocument::boolean(const QString& dotted, bool fallback) const {
  const QString s = scalar(dotted).toLower();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  return fallback;
}

void ConfigDocument::apply(const QVector<ConfigEdit>& edits) {
  if (edits.isEmpty()) return;
  std::vector<tb::config::YamlEdit> yamlEdits;
  for (const ConfigEdit& e : edits) yamlEdits.push_back({e.path.toStdString(), e.value, e.remove});
  text_ = QString::fromStdString(tb::config::apply_yaml_edits(text_.toStdString(), tree_, yamlEdits));
  parseError_.clear();
  setModified(true);
  Q_EMIT changed(Origin::Form);
}

// ---- recipe kind and model ----------------------------------------------------------------------------

namespace {
const char* const kLoraKeys[] = {"lora_attn_modules", "apply_lora_to_mlp", "apply_lora_to_output", "lora_rank",
                                 "lora_alpha", "lora_dropout", "use_dora", "quantize_base"};

struct ComponentName {
  QString ns;      // "torchtune.models.llama2." or ""
  QString prefix;  // "", "lora_" or "qlora_"
  QString base;    // "llama2_7b", "llama2", "from_hf_config"
};

ComponentName splitComponent(const QString& component) {
  ComponentName n;
  const int dot = component.lastIndexOf('.');
  n.ns = component.left(dot + 1);
  QString last = component.mid(dot + 1);
  for (const char* p : {"qlora_", "lora_"}) {
    if (last.startsWith(p)) {
      n.prefix = p;
      last = last.mid(int(strlen(p)));
      break;
    }
  }
  n.base = last;
  return n;
}

bool isPreset(const QString& base) { return tb::models::preset_args(base.toStdString()).has_value(); }
}  // namespace

RecipeKind ConfigDocument::recipeKind() const {
  const ComponentName n = splitComponent(scalar("model._component_"));
  if (n.prefix == "qlora_") return boolean("model.quantize_base", true) ? RecipeKind::Qlora : RecipeKind::Lora;
  if (n.prefix == "lora_") return boolean("model.quantize_base", false) ? RecipeKind::Qlora : RecipeKind::Lora;
  return RecipeKind::Full;
}

QString ConfigDocument::modelBaseName() const { return splitComponent(scalar("model._component_")).base; }

namespace {

// The values a recipe's own config starts from: a bundled config's sibling for that recipe
// (tiny/full_single_device -> tiny/lora_single_device), else torchtune's single-device defaults
// (full: lr 2e-5; LoRA and QLoRA: lr 3e-4, rank 8, alpha 16).
struct RecipeDefaults {
  QString lr, rank, alpha;
};

RecipeDefaults defaultsFor(RecipeKind kind, const QString& bundledName) {
  RecipeDefaults d = kind == RecipeKind::Full ? RecipeDefaults{"2e-5", {}, {}} : RecipeDefaults{"3e-4", "8", "16"};
  const int slash = bundledName.lastIndexOf('/');
  if (slash < 0) return d;
  const QString sibling = bundledName.left(slash + 1) +
                          (kind == RecipeKind::Full ? "full" : kind == RecipeKind::Lora ? "lora" : "qlora") + "_single_device";
  const std::string path = tb::config::find_config(sibling.toStdString());
  if (path.empty()) return d;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    auto read = [&](const char* section, const char* key, QString& out) {
      if (root[section] && root[section][key] && root[section][key].IsScalar())
        out = QString::fromStdString(root[section][key].Scalar());
    };
    read("optimizer", "lr", d.lr);
    read("model", "lora_rank", d.rank);
    read("model", "lora_alpha", d.alpha);
  } catch (const std::exception&) {
    // A bundled config that does not parse: the general defaults stand.
  }
  return d;
}

}  // namespace

void ConfigDocument::setRecipeKind(RecipeKind kind) {
  const RecipeKind before = recipeKind();
  if (kind == before) return;
  const ComponentName n = splitComponent(scalar("model._component_"));
  QVector<ConfigEdit> edits;
  QString prefix;
  // Presets have qlora_ builders; the generic and config.json builders get quantize_base instead.
  const bool preset = isPreset(n.base);
  if (kind == RecipeKind::Lora) prefix = "lora_";
  if (kind == RecipeKind::Qlora) prefix = preset ? "qlora_" : "lora_";
  edits << ConfigEdit::set("model._component_", YAML::Node((n.ns + prefix + n.base).toStdString()));
  if (kind == RecipeKind::Full) {
    for (const char* key : kLoraKeys)
      if (value(QString("model.") + key).IsDefined()) edits << ConfigEdit::erase(QString("model.") + key);
    if (value("save_adapter_weights_only").IsDefined()) edits << ConfigEdit::erase("save_adapter_weights_only");
  } else {
    // torchtune's single-device LoRA defaults, only where the config says nothing.
    auto add = [&](const char* key, const QString& yaml) {
      if (!value(QString("model.") + key).IsDefined()) edits << ConfigEdit::scalar(QString("model.") + key, yaml);
    };
    add("lora_attn_modules", "[q_proj, v_proj, output_proj]");
    add("apply_lora_to_mlp", "true");
    add("apply_lora_to_output", "false");
    // From a full fine-tune the adapters' size comes with the recipe (LoRA <-> QLoRA keeps the user's).
    const RecipeDefaults d = defaultsFor(kind, bundledName_);
    if (before == RecipeKind::Full) {
      edits << ConfigEdit::scalar("model.lora_rank", d.rank) << ConfigEdit::scalar("model.lora_alpha", d.alpha);
    } else {
      add("lora_rank", "8");
      add("lora_alpha", "16");
    }
    add("lora_dropout", "0.0");
    const bool explicitQuant = value("model.quantize_base").IsDefined();
    if (kind == RecipeKind::Qlora && !preset)
      edits << ConfigEdit::scalar("model.quantize_base", "true");
    else if (explicitQuant)
      edits << ConfigEdit::erase("model.quantize_base");
  }
  // A full fine-tune and an adapter want learning rates apart by 10-100x.
  if ((before == RecipeKind::Full) != (kind == RecipeKind::Full) && value("optimizer").IsDefined() && value("optimizer").IsMap())
    edits << ConfigEdit::scalar("optimizer.lr", defaultsFor(kind, bundledName_).lr);
  apply(edits);
  // The file's `# recipe:` line (what tunebench-cli runs it with) follows.
  static const QRegularExpression kRecipeLine(R"((^|\n)#\s*recipe:\s*\S+)");
  const auto m = kRecipeLine.match(text_);
  if (m.hasMatch() && m.capturedStart() < 4096) {
    QString text = text_;
    text.replace(m.capturedStart(), m.capturedLength(), m.captured(1) + "# recipe: " + recipeNameFor(kind));
    setText(text, Origin::Form);
  }
}

void ConfigDocument::setModelPreset(const QString& presetName) {
  const ComponentName n = splitComponent(scalar("model._component_"));
  const RecipeKind kind = recipeKind();
  // Presets live in different namespaces (torchtune.models.llama3_2., tunebench.models.): ask the registry
  // by alias for the canonical name; fall back to the alias itself.
  QString prefix = kind == RecipeKind::Full ? "" : (kind == RecipeKind::Qlora ? "qlora_" : "lora_");
  QString component = prefix + presetName;
  if (const auto* spec = tb::components::builtin().find(component.toStdString()))
    component = QString::fromStdString(spec->name);
  QVector<ConfigEdit> edits = {ConfigEdit::set("model._component_", YAML::Node(component.toStdString()))};
  // Arguments of the generic builders do not apply to a preset.
  if (!isPreset(n.base)) {
    const YAML::Node model = value("model");
    if (model.IsMap())
      for (auto it = model.begin(); it != model.end(); ++it) {
        const QString key = QString::fromStdString(it->first.Scalar());
        bool lora = false;
        for (const char* k : kLoraKeys) lora = lora || key == k;
        if (key != "_component_" && !lora) edits << ConfigEdit::erase("model." + key);
      }
  }
  if (kind == RecipeKind::Qlora) edits << ConfigEdit::erase("model.quantize_base");
  // A model folder's own tokenizer belongs to that folder's model (a 320-token vocabulary on a 32,000-token
  // preset): the preset gets the tokenizer the setup was opened with.
  if (n.base == "from_hf_config") {
    const QString folder = QDir::cleanPath(scalar("model.path"));
    const QString tokenizer = QDir::cleanPath(scalar("tokenizer.path"));
    const YAML::Node original = baseTree_.IsMap() ? baseTree_["tokenizer"] : YAML::Node();
    const bool fromFolder = !folder.isEmpty() && (tokenizer == folder || tokenizer.startsWith(folder + "/"));
    if (fromFolder && original.IsDefined() && original.IsMap() && original["path"].IsDefined() && original["path"].IsScalar() &&
        !QDir::cleanPath(QString::fromStdString(original["path"].Scalar())).startsWith(folder))
      edits << ConfigEdit::set("tokenizer", YAML::Clone(original));
  }
  // A preset builds its own architecture with seeded random weights: the old model's checkpoint would not
  // fit it (a shape mismatch at Start), and the saves take the preset family's layout.
  if (value("checkpointer").IsDefined() && value("checkpointer").IsMap()) {
    edits << ConfigEdit::set("checkpointer.checkpoint_dir", YAML::Node(YAML::NodeType::Null))
          << ConfigEdit::set("checkpointer.checkpoint_files", YAML::Node(YAML::NodeType::Sequence));
    if (const auto args = tb::models::preset_args(presetName.toStdString())) {
      const nlohmann::json hf = {{"model_type", tb::models::family_name(args->family)},
                                 {"vocab_size", args->vocab_size},
                                 {"tie_word_embeddings", args->tie_word_embeddings}};
      edits << ConfigEdit::set("checkpointer.model_type", YAML::Node(tb::checkpoint::hf_model_type(hf)));
    }
    if (value("checkpointer.adapter_checkpoint").IsDefined()) edits << ConfigEdit::erase("checkpointer.adapter_checkpoint");
  }
  if (value("resume_from_checkpoint").IsDefined()) edits << ConfigEdit::scalar("resume_from_checkpoint", "false");
  apply(edits);
}

// ---- validation and the command line ------------------------------------------------------------------

tb::config::LoadResult ConfigDocument::validate(const std::vector<std::string>& overrides) const {
  tb::config::LoadOptions options;
  options.overrides = overrides;
  options.recipe = recipe().toStdString();
  options.registry = &tb::components::builtin();
  return tb::config::load_text(text_.toStdString(), displayName().toStdString(), options);
}

namespace {
void flatten(const YAML::Node& node, const QString& prefix, std::map<QString, YAML::Node>& out) {
  if (node.IsMap() && node.size() > 0) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const QString key = QString::fromStdString(it->first.Scalar());
      flatten(it->second, prefix.isEmpty() ? key : prefix + "." + key, out);
    }
    return;
  }
  if (!prefix.isEmpty()) out[prefix] = node;
}

QString overrideValue(const YAML::Node& v) {
  if (!v.IsDefined() || v.IsNull()) return "null";
  if (v.IsScalar()) return QString::fromStdString(v.Scalar());
  if (v.IsSequence()) {
    QStringList items;
    for (const auto& item : v) items << (item.IsScalar() ? QString::fromStdString(item.Scalar()) : QString::fromStdString(tb::config::yaml_flow(item)));
    return "[" + items.join(',') + "]";
  }
  return QString::fromStdString(tb::config::yaml_flow(v));
}
}  // namespace

QStringList ConfigDocument::cliOverrides() const {
  std::map<QString, YAML::Node> base, now;
  flatten(baseTree_, {}, base);
  flatten(tree_, {}, now);
  QStringList removed, changed;
  for (const auto& [path, v] : base) {
    if (now.count(path)) continue;
    // A value that became a map is overwritten by its keys below, not deleted.
    bool replacedByMap = false;
    for (const auto& entry : now) replacedByMap = replacedByMap || entry.first.startsWith(path + ".");
    if (!replacedByMap) removed << "~" + path;
  }
  for (const auto& [path, v] : now) {
    auto it = base.find(path);
    if (it != base.end() && tb::config::yaml_same(it->second, v)) continue;
    changed << path + "=" + overrideValue(v);
  }
  return removed + changed;
}

QString ConfigDocument::cliConfigArg() const {
  if (!filePath_.isEmpty()) return filePath_;
  if (!bundledName_.isEmpty()) return bundledName_;
  return displayName();
}

QString ConfigDocument::cliCommand(QString* note) const {
  QStringList args = {"tunebench-cli", "run", recipe(), "--config", shellQuote(cliConfigArg())};
  if (filePath_.isEmpty() && bundledName_.isEmpty()) {
    if (note) *note = "Save the config to a file first: the command names it.";
  } else if (note) {
    note->clear();
  }
  for (const QString& o : cliOverrides()) args << shellQuote(o);
  return args.join(' ');
}

}  // namespace tb::ui
