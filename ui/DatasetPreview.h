// The first samples of the configured dataset as the recipe sees them (inference/data_preview.h, the
// code behind `tunebench-cli data preview`): the text the model reads — the chat template's turns with
// their special tokens written out — with the trained part highlighted, the dataset's counts, and its
// warnings (fully masked samples, skipped rows, truncation). When the tokenizer or dataset cannot be
// built, the raw text of the data file instead, with the same message the CLI prints.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

#include <functional>

#include "config/config.h"

namespace tb::ui {

struct PreviewToken {
  QString text;   // the token's text as it reads in the sample (leading space included)
  qint64 id = 0;
  bool trained = false;  // the loss is computed on predicting this token
};

struct PreviewSample {
  QVector<PreviewToken> tokens;
};

struct DatasetPreviewResult {
  bool tokenized = false;         // false: `rawText` holds the file's first records
  QVector<PreviewSample> samples;
  QString rawText;
  QString description;            // the dataset's own one-line description, or the file name
  QString formatting;             // the model's chat template, or the tokenizer's own formatting
  QString counts;                 // "1200 samples · 310,544 tokens · 41.2% trained · 3 truncated"
  QStringList warnings;           // fully masked samples, skipped rows, truncation
  QString note;                   // why tokens are not shown, when they are not
  int totalSamples = -1;
};

// Runs tokenizer + dataset of `config` (slow: call it off the GUI thread). `dataFile` is the file
// shown raw when tokenizing is not possible. A dataset of more than its first rows goes to `firstRows`
// from those rows at once (counts marked as theirs), before every row is read for the counts.
DatasetPreviewResult buildDatasetPreview(const tb::config::Config& config, int maxSamples,
                                         const std::function<void(const DatasetPreviewResult&)>& firstRows = {});
DatasetPreviewResult rawDatasetPreview(const QString& dataFile, int maxSamples, const QString& note);

// HTML for a QTextBrowser: the samples' text, trained runs highlighted, masked runs grey.
QString previewHtml(const DatasetPreviewResult& preview);

}  // namespace tb::ui
