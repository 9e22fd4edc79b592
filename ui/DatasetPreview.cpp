#include "DatasetPreview.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/dataset.h"
#include "data/tokenizer.h"

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

DatasetPreviewResult buildDatasetPreview(const tb::config::Config& config, int maxSamples) {
  const QString dataFile = dataFileOf(config);
  try {
    const auto& registry = tb::components::builtin();
    auto tokenizer = registry.build<std::shared_ptr<tb::data::Tokenizer>>(config.at("tokenizer"));
    if (!tokenizer) throw std::runtime_error("the tokenizer component built nothing");
    tb::data::DatasetContext context;
    context.tokenizer = tokenizer;
    auto dataset = tb::data::build_dataset(registry, config.at("dataset"), context);
    DatasetPreviewResult r;
    r.tokenized = true;
    r.description = QString::fromStdString(dataset->description());
    r.totalSamples = int(dataset->size());
    for (size_t i = 0; i < dataset->size() && int(i) < maxSamples; ++i) {
      const tb::data::Sample s = dataset->get(i);
      PreviewSample sample;
      // Pieces by decoding growing prefixes: single-token decoding drops SentencePiece's leading spaces.
      std::vector<int64_t> prefix;
      QString decoded;
      for (size_t j = 0; j < s.tokens.size(); ++j) {
        prefix.push_back(s.tokens[j]);
        const QString now = QString::fromStdString(tokenizer->decode(prefix));
        PreviewToken t;
        t.id = s.tokens[j];
        t.text = now.startsWith(decoded) ? now.mid(decoded.size()) : QString::fromStdString(tokenizer->decode({s.tokens[j]}));
        decoded = now;
        // labels are shifted: token j is learned when position j-1 predicts it.
        t.trained = j > 0 && j - 1 < s.labels.size() && s.labels[j - 1] != tb::data::kIgnoreIndex;
        sample.tokens << t;
      }
      r.samples << sample;
    }
    return r;
  } catch (const std::exception& e) {
    return rawDatasetPreview(dataFile, maxSamples, QString("Tokens are not shown: %1").arg(e.what()));
  }
}

QString previewHtml(const DatasetPreviewResult& p) {
  QString html = "<div style='font-family:monospace'>";
  if (!p.description.isEmpty())
    html += "<p><b>" + p.description.toHtmlEscaped() + "</b>" +
            (p.totalSamples >= 0 ? QString(" — %1 samples").arg(p.totalSamples) : QString()) + "</p>";
  if (!p.note.isEmpty()) html += "<p style='color:#a05a00'>" + p.note.toHtmlEscaped() + "</p>";
  if (!p.tokenized) {
    html += "<pre>" + p.rawText.toHtmlEscaped() + "</pre></div>";
    return html;
  }
  html += "<p style='color:#666'>Boxed tokens are trained on; <span style='color:#aaa'>grey</span> ones are "
          "masked from the loss (prompt, BOS, padding).</p>";
  for (int i = 0; i < p.samples.size(); ++i) {
    const auto& s = p.samples[i];
    int trained = 0;
    for (const auto& t : s.tokens) trained += t.trained;
    html += QString("<p><b>Sample %1</b> — %2 tokens, %3 trained<br>").arg(i + 1).arg(s.tokens.size()).arg(trained);
    for (const auto& t : s.tokens) {
      QString text = t.text.toHtmlEscaped();
      text.replace(' ', "&middot;").replace('\n', "&#x21b5;<br>");
      if (text.isEmpty()) text = QString("&lt;%1&gt;").arg(t.id);
      if (t.trained)
        html += "<span style='background:#e3f0ff;border:1px solid #9cc0ea'>" + text + "</span> ";
      else
        html += "<span style='color:#aaaaaa'>" + text + "</span> ";
    }
    html += "</p>";
  }
  return html + "</div>";
}

}  // namespace tb::ui
