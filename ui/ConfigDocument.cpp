#include "ConfigDocument.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>

#include <map>

#include "config/registry.h"
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

ConfigEdit ConfigEdit::scalar(const QString& path, const QString& yamlText) {
  YAML::Node v;
  try {
    v = YAML::Load(yamlText.toStdString());
  } catch (const YAML::Exception&) {
    v = YAML::Node(yamlText.toStdString());
  }
  if (!v.IsDefined()) v = YAML::Node(YAML::NodeType::Null);
  return {path, v, false};
}

// ---- dotted paths on raw trees -------------------------------------------------------------------------

namespace yamlpath {
namespace {
YAML::Node undefinedNode() {
  const YAML::Node empty(YAML::NodeType::Map);
  return empty["absent"];
}

bool isIndex(const QString& s) {
  bool ok = false;
  s.toUInt(&ok);
  return ok;
}

YAML::Node childOf(const YAML::Node& n, const QString& key) {
  if (n.IsMap()) {
    const YAML::Node& c = n;  // const lookup: never inserts
    return c[key.toStdString()];
  }
  if (n.IsSequence() && isIndex(key) && key.toUInt() < n.size()) return n[key.toUInt()];
  return undefinedNode();
}

void setIn(YAML::Node node, const QStringList& keys, int i, const YAML::Node& value) {
  const std::string key = keys[i].toStdString();
  if (i + 1 == keys.size()) {
    node[key] = YAML::Clone(value);
    return;
  }
  if (!node[key].IsMap()) node[key] = YAML::Node(YAML::NodeType::Map);
  setIn(node[key], keys, i + 1, value);
}
}  // namespace

YAML::Node get(const YAML::Node& root, const QString& dotted) {
  YAML::Node cur;
  cur.reset(root);
  for (const QString& key : dotted.split('.')) {
    YAML::Node next = childOf(cur, key);
    if (!next.IsDefined()) return next;
    cur.reset(next);
  }
  return cur;
}

void set(YAML::Node& root, const QString& dotted, const YAML::Node& value) {
  if (!root.IsMap()) root.reset(YAML::Node(YAML::NodeType::Map));
  setIn(root, dotted.split('.'), 0, value);
}

void remove(YAML::Node& root, const QString& dotted) {
  const int dot = dotted.lastIndexOf('.');
  YAML::Node parent = dot < 0 ? root : get(root, dotted.left(dot));
  if (parent.IsDefined() && parent.IsMap()) parent.remove(dotted.mid(dot + 1).toStdString());
}

bool same(const YAML::Node& a, const YAML::Node& b) {
  const bool aNull = !a.IsDefined() || a.IsNull(), bNull = !b.IsDefined() || b.IsNull();
  if (aNull || bNull) return aNull == bNull;
  if (a.Type() != b.Type()) return false;
  if (a.IsScalar()) return a.Scalar() == b.Scalar();
  if (a.size() != b.size()) return false;
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  for (auto it = a.begin(); it != a.end(); ++it) {
    const YAML::Node& cb = b;
    const YAML::Node other = cb[it->first.Scalar()];
    if (!other.IsDefined() || !same(it->second, other)) return false;
  }
  return true;
}

QString emit(const YAML::Node& value) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetMapFormat(YAML::Flow);
  out.SetNullFormat(YAML::LowerNull);
  if (!value.IsDefined() || value.IsNull())
    out << YAML::Null;
  else
    out << value;
  return QString::fromStdString(out.c_str());
}
}  // namespace yamlpath

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
  setModified(!yamlpath::same(baseTree_, tree_) || base.isEmpty());
}

bool ConfigDocument::saveAs(const QString& path, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = path + ": " + file.errorString();
    return false;
  }
  file.write(text_.toUtf8());
  if (!file.commit()) {
    if (error) *error = path + ": " + file.errorString();
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

YAML::Node ConfigDocument::value(const QString& dotted) const { return yamlpath::get(tree_, dotted); }

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

// ---- text patching: small edits keep the user's comments and layout -------------------------------------

namespace {

struct Lines {
  std::vector<size_t> starts;  // offset of each line; one past the end as the last entry
  explicit Lines(const std::string& text) {
    starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
    if (starts.back() != text.size()) starts.push_back(text.size());
  }
  int count() const { return int(starts.size()) - 1; }
  size_t begin(int line) const { return starts[std::min<size_t>(line, starts.size() - 1)]; }
  size_t end(int line) const { return starts[std::min<size_t>(line + 1, starts.size() - 1)]; }
};

int indentation(const std::string& line) {
  int n = 0;
  while (n < int(line.size()) && line[n] == ' ') ++n;
  return n;
}

bool blankOrComment(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t\r\n");
  return first == std::string::npos || line[first] == '#';
}

// Where a plain or quoted scalar that starts at `start` ends on its line.
size_t scalarEnd(const std::string& text, size_t start, size_t lineEnd) {
  if (start >= lineEnd) return start;
  const char q = text[start];
  if (q == '"' || q == '\'') {
    for (size_t i = start + 1; i < lineEnd; ++i) {
      if (q == '"' && text[i] == '\\') {
        ++i;
        continue;
      }
      if (text[i] == q) {
        if (q == '\'' && i + 1 < lineEnd && text[i + 1] == '\'') {
          ++i;
          continue;
        }
        return i + 1;
      }
    }
    return std::string::npos;
  }
  if (q == '[' || q == '{') {
    const char close = q == '[' ? ']' : '}';
    int depth = 0;
    for (size_t i = start; i < lineEnd; ++i) {
      if (text[i] == q) ++depth;
      if (text[i] == close && --depth == 0) return i + 1;
    }
    return std::string::npos;
  }
  size_t end = start;
  for (size_t i = start; i < lineEnd; ++i) {
    if (text[i] == '#' && i > start && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
    if (text[i] == '\n' || text[i] == '\r') break;
    end = i + 1;
  }
  while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
  return end;
}

// A value as block YAML lines indented by `indent` (for a map inserted under a key).
std::string blockLines(const YAML::Node& value, int indent) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetNullFormat(YAML::LowerNull);
  out << value;
  std::string result;
  const std::string pad(indent, ' ');
  for (const QString& line : QString::fromStdString(out.c_str()).split('\n'))
    if (!line.isEmpty()) result += pad + line.toStdString() + "\n";
  return result;
}

// "key: value" lines for inserting `key` into a block map whose keys sit at column `indent`.
std::string keyLines(const std::string& key, const YAML::Node& value, int indent) {
  const std::string pad(indent, ' ');
  if (value.IsMap() && value.size() > 0) return pad + key + ":\n" + blockLines(value, indent + 2);
  return pad + key + ": " + yamlpath::emit(value).toStdString() + "\n";
}

}  // namespace

// Applies one edit to the text in place. False when the layout is not one this handles (flow maps,
// block values replaced by others, ...); the caller then regenerates the text from the tree.
bool ConfigDocument::patchText(std::string& text, const ConfigEdit& edit) const {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return false;
  }
  if (!doc.IsMap()) return false;
  QStringList keys = edit.path.split('.');
  // The deepest map on the path that exists; what is missing below it is inserted as one nested map.
  YAML::Node parent;
  parent.reset(doc);
  int depth = 0;
  while (depth + 1 < keys.size()) {
    YAML::Node next = yamlpath::get(parent, keys[depth]);
    if (!next.IsDefined() || !next.IsMap()) break;
    parent.reset(next);
    ++depth;
  }
  if (!parent.IsMap()) return false;
  const std::string leaf = keys[depth].toStdString();
  YAML::Node value = YAML::Clone(edit.value);
  for (int i = int(keys.size()) - 1; i > depth; --i) {
    if (edit.remove) return true;  // removing below a missing map: nothing to do
    YAML::Node wrapper(YAML::NodeType::Map);
    wrapper[keys[i].toStdString()] = value;
    value.reset(wrapper);
  }

  const Lines lines(text);
  auto lineText = [&](int l) { return text.substr(lines.begin(l), lines.end(l) - lines.begin(l)); };
  YAML::Node keyNode, valueNode;
  bool found = false;
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    if (it->first.Scalar() == leaf) {
      keyNode.reset(it->first);
      valueNode.reset(it->second);
      found = true;
      break;
    }
  }
  // Keys written in block style: only indentation (or a list dash) before them on their line.
  auto blockKeyAt = [&](const YAML::Mark& m) {
    if (m.line < 0 || m.line >= lines.count()) return false;
    const std::string l = lineText(m.line);
    if (int(l.size()) < m.column) return false;
    const std::string before = l.substr(0, m.column);
    return before.find_first_not_of(" -") == std::string::npos;
  };

  if (found) {
    const YAML::Mark km = keyNode.Mark();
    if (!blockKeyAt(km)) return false;
    // The key found is a non-map on the way to the leaf: nothing to remove, or a scalar to turn into a map.
    if (depth + 1 < keys.size()) return edit.remove;
    if (edit.remove) {
      int last = km.line;
      for (int l = km.line + 1; l < lines.count(); ++l) {
        const std::string lt = lineText(l);
        if (blankOrComment(lt)) continue;
        if (indentation(lt) <= km.column) break;
        last = l;
      }
      text.erase(lines.begin(km.line), lines.end(last) - lines.begin(km.line));
      return true;
    }
    if (value.IsMap() && value.size() > 0) return false;
    const YAML::Mark vm = valueNode.Mark();
    const size_t keyLineEnd = lines.end(km.line);
    // `key:` with nothing after it (null): put the value after the colon.
    const bool emptyValue = valueNode.IsNull() && (vm.line != km.line || vm.pos < 0 ||
                                                   size_t(vm.pos) >= keyLineEnd ||
                                                   text.compare(size_t(vm.pos), 1, "#") == 0);
    if (emptyValue) {
      const size_t keyStart = lines.begin(km.line) + km.column;
      size_t colon = text.find(':', keyStart + leaf.size());
      if (colon == std::string::npos || colon >= keyLineEnd) return false;
      text.insert(colon + 1, " " + yamlpath::emit(value).toStdString());
      return true;
    }
    if (vm.line != km.line || valueNode.IsMap() || (valueNode.IsSequence() && text[vm.pos] != '['))
      return false;  // a block value
    const size_t start = size_t(vm.pos);
    const size_t end = scalarEnd(text, start, keyLineEnd);
    if (end == std::string::npos || end <= start) return false;
    text.replace(start, end - start, yamlpath::emit(value).toStdString());
    return true;
  }

  if (edit.remove) return true;
  // Insert after the last line belonging to the map, at its keys' indentation.
  if (parent.size() == 0) return false;  // `{}`: regenerate
  int column = 0, lastLine = -1;
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    const YAML::Mark m = it->first.Mark();
    if (!blockKeyAt(m)) return false;
    column = m.column;
    lastLine = std::max(lastLine, m.line);
  }
  int last = lastLine;
  for (int l = lastLine + 1; l < lines.count(); ++l) {
    const std::string lt = lineText(l);
    if (blankOrComment(lt)) continue;
    if (indentation(lt) <= column) break;
    last = l;
  }
  size_t at = lines.end(last);
  std::string insertion = keyLines(leaf, value, column);
  if (at > 0 && text[at - 1] != '\n') insertion = "\n" + insertion;
  text.insert(at, insertion);
  return true;
}

void ConfigDocument::apply(const QVector<ConfigEdit>& edits) {
  if (edits.isEmpty()) return;
  std::string text = text_.toStdString();
  bool patched = parses();
  for (const ConfigEdit& e : edits) {
    if (e.remove)
      yamlpath::remove(tree_, e.path);
    else
      yamlpath::set(tree_, e.path, e.value);
    if (patched) patched = patchText(text, e);
  }
  // The patched text must say exactly what the tree says; otherwise regenerate it from the tree.
  if (patched) {
    try {
      patched = yamlpath::same(YAML::Load(text), tree_);
    } catch (const YAML::Exception&) {
      patched = false;
    }
  }
  if (!patched) {
    // Keep the leading comment block (`# recipe: ...`, the description); the rest comes from the tree.
    QString header;
    for (const QString& line : text_.split('\n')) {
      if (!line.startsWith('#')) break;
      header += line + "\n";
    }
    tb::config::Config c;
    c.root = tree_;
    text = header.toStdString() + c.to_yaml();
  }
  text_ = QString::fromStdString(text);
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

void ConfigDocument::setRecipeKind(RecipeKind kind) {
  if (kind == recipeKind()) return;
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
    add("lora_rank", "8");
    add("lora_alpha", "16");
    add("lora_dropout", "0.0");
    const bool explicitQuant = value("model.quantize_base").IsDefined();
    if (kind == RecipeKind::Qlora && !preset)
      edits << ConfigEdit::scalar("model.quantize_base", "true");
    else if (explicitQuant)
      edits << ConfigEdit::erase("model.quantize_base");
  }
  apply(edits);
}

void ConfigDocument::setModelPreset(const QString& presetName) {
  const ComponentName n = splitComponent(scalar("model._component_"));
  const RecipeKind kind = recipeKind();
  // Presets live in different namespaces (torchtune.models.llama3_2., tunebench.models.): ask the registry
  // by alias for the canonical name; fall back to the alias itself.
  QString prefix = kind == RecipeKind::Full ? "" : (kind == RecipeKind::Qlora ? "qlora_" : "lora_");
  QString component = prefix + presetName;
  if (const auto* spec = tb::config::Registry::builtin().find(component.toStdString()))
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
  apply(edits);
}

// ---- validation and the command line ------------------------------------------------------------------

tb::config::LoadResult ConfigDocument::validate(const std::vector<std::string>& overrides) const {
  tb::config::LoadOptions options;
  options.overrides = overrides;
  options.recipe = recipe().toStdString();
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
    for (const auto& item : v) items << (item.IsScalar() ? QString::fromStdString(item.Scalar()) : yamlpath::emit(item));
    return "[" + items.join(',') + "]";
  }
  return yamlpath::emit(v);
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
    if (it != base.end() && yamlpath::same(it->second, v)) continue;
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
