#include "DatasetChoice.h"

#include <algorithm>
#include <iterator>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/dataset.h"

namespace tb::ui {

DatasetChoice datasetChoiceFor(const tb::data::Row& row, bool plainText) {
  tb::data::require_readable(row);
  DatasetChoice c{"torchtune.datasets.text_completion_dataset", {}};
  const auto& first = row.value;
  auto has = [&](const char* key) { return first.is_object() && first.contains(key); };
  if (plainText) {
  } else if (has("instruction") || has("output")) {
    c.component = "torchtune.datasets.alpaca_dataset";
  } else if (has("messages") || has("conversations")) {
    c.component = "torchtune.datasets.chat_dataset";
    const std::string column = has("messages") ? "messages" : "conversations";
    c.extra << ConfigEdit::set("dataset.conversation_column", YAML::Node(column));
    c.extra << ConfigEdit::set("dataset.conversation_style", YAML::Node(column == "messages" ? "openai" : "sharegpt"));
  } else if (has("text")) {
    c.extra << ConfigEdit::set("dataset.column", YAML::Node("text"));
  } else {
    throw tb::data::DataError(row.file, row.line, "the first row has none of instruction/output, messages, conversations or text");
  }
  return c;
}

QVector<ConfigEdit> datasetEdits(const ConfigDocument& doc, const DatasetChoice& choice, const YAML::Node& source) {
  // The keys that say where the data is: those `source` does not set go.
  static const char* const kWhere[] = {"source", "data_files", "name", "split", "data_dir", "field"};
  if (doc.scalar("dataset._component_") == choice.component) {
    QVector<ConfigEdit> edits;
    for (const char* key : kWhere) {
      const QString path = QString("dataset.") + key;
      if (source[key]) edits << ConfigEdit::set(path, YAML::Clone(source[key]));
      else if (doc.value(path).IsDefined()) edits << ConfigEdit::erase(path);
    }
    return edits;
  }
  YAML::Node node(YAML::NodeType::Map);
  node["_component_"] = choice.component.toStdString();
  for (auto it = source.begin(); it != source.end(); ++it) node[it->first.Scalar()] = YAML::Clone(it->second);
  // What the old dataset said that the new component takes too (train_on_input, packed, ...) stays: the
  // builders' defaults differ (alpaca_dataset trains on the prompt unless told not to).
  const YAML::Node old = doc.value("dataset");
  if (const auto* spec = tb::components::builtin().find(choice.component.toStdString()); spec && old.IsDefined() && old.IsMap())
    for (auto it = old.begin(); it != old.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (node[key] || key == "column" || key == "conversation_column" || key == "conversation_style") continue;
      if (std::find(std::begin(kWhere), std::end(kWhere), key) != std::end(kWhere)) continue;
      for (const auto& a : spec->args)
        if (a.name == key) node[key] = YAML::Clone(it->second);
    }
  QVector<ConfigEdit> edits = {ConfigEdit::set("dataset", node)};
  edits += choice.extra;
  return edits;
}

}  // namespace tb::ui
