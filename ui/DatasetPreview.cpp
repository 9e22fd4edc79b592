#include "DatasetPreview.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

#include "inference/data_preview.h"

namespace tb::ui {

namespace {
QString dataFileOf(const tb::config::Config& config) {
  YAML::Node files = config.at("dataset.data_files");
  if (files.IsDefined() && files.IsScalar()) return QString::fromStdString(files.Scalar());
  if (files.IsDefined() && files.IsSequence() && files.size() > 0) return QString::fromStdString(files[0].Scalar());
  YAML::Node source = config.at("dataset.source");
  if (source.IsDefined() && source.IsScalar() && QFileInfo(QString::fromStdString(source.Scalar())).isFile())
    return QString::fromStdString(source.Scalar());
  return {};
}
}  // namespace

DatasetPreviewResult rawDatasetPreview(const QString& dataFile, int maxSamples, const QString& note) {
  DatasetPreviewResult r;
  r.note = note;
  r.description = QFileInfo(dataFile).fileName();
  QFile file(dataFile);
  if (dataFile.isEmpty() || !file.open(QIODevice::ReadOnly)) {
    r.rawText = dataFile.isEmpty() ? "(the dataset names no local file)" : dataFile + ": " + file.errorString();
    return r;
  }
  const QByteArray head = file.read(2 << 20);
  QStringList shown;
  const QJsonDocument doc = QJsonDocument::fromJson(head);
  if (doc.isArray()) {
    r.totalSamples = int(doc.array().size());
    for (const auto& v : doc.array()) {
      if (shown.size() >= maxSamples) break;
      shown << QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Indented)).trimmed();
    }
  } else {
    for (const QByteArray& line : head.split('\n')) {
      if (shown.size() >= maxSamples) break;
      if (line.trimmed().isEmpty()) continue;
      const QJsonDocument row = QJsonDocument::fromJson(line);
      shown << (row.isObject() ? QString::fromUtf8(row.toJson(QJsonDocument::Indented)).trimmed()
                               : QString::fromUtf8(line).left(2000));
    }
  }
  r.rawText = shown.join("\n\n");
  return r;
}

namespace {

DatasetPreviewResult tokenizedPreview(const tb::inference::DataPreview& p) {
  DatasetPreviewResult r;
  r.tokenized = true;
  r.description = QString::fromStdString(p.description);
  r.formatting = QString::fromStdString(p.formatting);
  r.totalSamples = int(p.total_samples);
  const auto& st = p.stats;
  r.counts = QString("%1 samples · %2 tokens · %3% trained")
                 .arg(p.total_samples)
                 .arg(QString::number(qulonglong(st.tokens)))
                 .arg(st.tokens ? 100.0 * double(st.trained_tokens) / double(st.tokens) : 0.0, 0, 'f', 1);
  if (st.truncated) r.counts += QString(" · %1 truncated").arg(st.truncated);
  if (st.bad_rows) r.counts += QString(" · %1 bad rows skipped").arg(st.bad_rows);
  if (st.fully_masked) r.counts += QString(" · %1 fully masked").arg(st.fully_masked);
  if (st.row_limit_reached) r.counts = QString("The first %1 rows: ").arg(st.rows) + r.counts + " (counting every row…)";
  for (const auto& w : p.warnings) r.warnings << QString::fromStdString(w);
  for (const auto& s : p.samples) {
    PreviewSample sample;
    for (const auto& t : s.tokens) sample.tokens << PreviewToken{QString::fromStdString(t.text), t.id, t.trained};
    r.samples << sample;
  }
  return r;
}

}  // namespace

DatasetPreviewResult buildDatasetPreview(const tb::config::Config& config, int maxSamples,
                                         const std::function<void(const DatasetPreviewResult&)>& firstRows) {
  const QString dataFile = dataFileOf(config);
  try {
    std::function<void(const tb::inference::DataPreview&)> first;
    if (firstRows) first = [&](const tb::inference::DataPreview& p) { firstRows(tokenizedPreview(p)); };
    return tokenizedPreview(tb::inference::preview_dataset(config, size_t(std::max(0, maxSamples)), first));
  } catch (const std::exception& e) {
    return rawDatasetPreview(dataFile, maxSamples, QString("Tokens are not shown: %1").arg(e.what()));
  }
}

QString previewHtml(const DatasetPreviewResult& p) {
  QString html = "<div>";
  if (!p.description.isEmpty()) html += "<p><b>" + p.description.toHtmlEscaped() + "</b></p>";
  if (!p.note.isEmpty()) html += "<p style='color:#a05a00'>" + p.note.toHtmlEscaped() + "</p>";
  if (!p.tokenized) {
    html += "<pre>" + p.rawText.toHtmlEscaped() + "</pre></div>";
    return html;
  }
  html += "<p>" + p.counts.toHtmlEscaped() + "<br><span style='color:#666'>Formatted by " +
          p.formatting.toHtmlEscaped() + ". <span style='background:#dcefd8'>Highlighted</span> text is trained on; "
          "<span style='color:#999'>grey</span> text is masked from the loss.</span></p>";
  for (const auto& w : p.warnings) html += "<p style='color:#a05a00'>&#9888; " + w.toHtmlEscaped() + "</p>";
  for (int i = 0; i < p.samples.size(); ++i) {
    const auto& s = p.samples[i];
    int trained = 0;
    for (const auto& t : s.tokens) trained += t.trained;
    html += QString("<p><b>Sample %1</b> — %2 tokens, %3 trained</p>").arg(i + 1).arg(s.tokens.size()).arg(trained);
    if (trained == 0) html += "<p style='color:#a05a00'>&#9888; Every token of this sample is masked: it trains nothing.</p>";
    // Runs of tokens with the same flag, as one span each: the text reads as the model's template writes it.
    html += "<pre style='white-space:pre-wrap'>";
    for (int j = 0; j < s.tokens.size();) {
      const bool on = s.tokens[j].trained;
      QString run;
      for (; j < s.tokens.size() && s.tokens[j].trained == on; ++j) run += s.tokens[j].text;
      html += on ? "<span style='background:#dcefd8'>" + run.toHtmlEscaped() + "</span>"
                 : "<span style='color:#999999'>" + run.toHtmlEscaped() + "</span>";
    }
    html += "</pre>";
  }
  return html + "</div>";
}

}  // namespace tb::ui
