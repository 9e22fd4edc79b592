// The first samples of the configured dataset as the model sees them: tokens, with the ones masked
// from the loss greyed. Built with tunecore's tokenizer and dataset components; when those cannot be
// built (invalid config, a component missing), the raw text of the data file instead.
#pragma once

#include <QString>
#include <QVector>

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
  QString note;                   // why tokens are not shown, when they are not
  int totalSamples = -1;
};

// Runs tokenizer + dataset of `config` (slow: call it off the GUI thread). `dataFile` is the file
// shown raw when tokenizing is not possible.
DatasetPreviewResult buildDatasetPreview(const tb::config::Config& config, int maxSamples);
DatasetPreviewResult rawDatasetPreview(const QString& dataFile, int maxSamples, const QString& note);

// HTML for a QTextBrowser: trained tokens in boxes, masked ones grey.
QString previewHtml(const DatasetPreviewResult& preview);

}  // namespace tb::ui
