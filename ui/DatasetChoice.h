// Making a dataset the config's: which dataset component its first row calls for (instruction/output ->
// alpaca_dataset, messages/conversations -> chat_dataset, text -> text_completion_dataset) and the config
// edits that point it at the data: a local file (source: json/csv/parquet/text, data_files) or a Hub
// dataset (source: org/name, name, split). The first row is read by the code the recipes read with, so a
// malformed file gets the CLI's file:line message.
#pragma once

#include <QString>
#include <QVector>

#include <yaml-cpp/yaml.h>

#include "ConfigDocument.h"
#include "data/json_rows.h"

namespace tb::ui {

struct DatasetChoice {
  QString component;          // torchtune.datasets.*
  QVector<ConfigEdit> extra;  // the columns it reads (conversation_column, column)
};

// Throws data::DataError at the row when it has none of the columns the components read.
DatasetChoice datasetChoiceFor(const tb::data::Row& first, bool plainText);

// The edits that make `doc`'s dataset `choice` over `source` (a map: source and data_files, or source, name
// and split). The same component keeps its other arguments; another keeps those it shares with the old one.
QVector<ConfigEdit> datasetEdits(const ConfigDocument& doc, const DatasetChoice& choice, const YAML::Node& source);

}  // namespace tb::ui
