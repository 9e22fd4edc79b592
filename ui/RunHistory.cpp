#include "RunHistory.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <algorithm>
#include <map>

#include "training/run_checkpoint.h"

namespace tb::ui {

int RunLog::warmupSteps() const {
  return int(std::count_if(steps.begin(), steps.end(),
                           [](const auto& s) { return s.phase == tb::training::Phase::Warmup; }));
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

double RunLog::medianSteadyTokensPerSecond() const {
  std::vector<double> v;
  for (const auto& s : steps)
    if (s.phase == tb::training::Phase::Steady) v.push_back(s.tokens_per_second);
  return median(v);
}

double RunLog::medianSteadyStepSeconds() const {
  std::vector<double> v;
  for (const auto& s : steps)
    if (s.phase == tb::training::Phase::Steady) v.push_back(s.step_time_s);
  return median(v);
}

double RunLog::peakMemoryGib() const {
  double peak = 0;
  for (const auto& s : steps) peak = std::max(peak, s.peak_memory_gib);
  return peak;
}

QString RunLog::folder() const {
  QDir dir = QFileInfo(path).dir();
  if (dir.dirName() == "logs") dir.cdUp();
  return dir.absolutePath();
}

QString metricsFileOf(const QString& path) {
  const QFileInfo info(path);
  if (info.isFile()) return info.absoluteFilePath();
  const QDir dir(path);
  if (QFileInfo(dir.filePath("logs/metrics.jsonl")).isFile()) return dir.filePath("logs/metrics.jsonl");
  if (QFileInfo(dir.filePath("metrics.jsonl")).isFile()) return dir.filePath("metrics.jsonl");
  return dir.filePath("logs/metrics.jsonl");
}

RunLog readRunLog(const QString& path) {
  RunLog log;
  log.path = metricsFileOf(path);
  QFile file(log.path);
  if (!file.open(QIODevice::ReadOnly)) {
    log.errors << log.path + ": " + file.errorString();
    return log;
  }
  // The file is appended to by every run into the folder. A step number that goes back starts a new
  // stretch: a fresh run (step 1) replaces everything, a resume from step k (k + 1) keeps 1..k. What
  // follows an `end` event is another invocation: its compile and end events replace the old ones.
  std::map<int64_t, tb::training::StepMetrics> byStep;
  std::vector<std::pair<int64_t, QString>> checkpoints;  // (step, path)
  int64_t lastStep = 0;
  bool ended = false;
  int lineNo = 0;
  while (!file.atEnd()) {
    const QByteArray line = file.readLine().trimmed();
    ++lineNo;
    if (line.isEmpty()) continue;
    const auto j = nlohmann::json::parse(line.constData(), line.constData() + line.size(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      // The last line of a run that is still writing may be partial; anything else is worth saying.
      log.errors << QString("%1:%2: not a JSON object").arg(log.path).arg(lineNo);
      continue;
    }
    try {
      const std::string event = j.contains("event") ? j.value("event", "") : "";
      if (ended && event != "end") {
        ended = false;
        log.compileSeconds = -1;
        log.endStatus.clear();
        log.endMessage.clear();
      }
      if (!event.empty()) {
        if (event == "compile") {
          log.compileSeconds = j.value("seconds", -1.0);
          log.compiled = true;
        }
        if (event == "start") {
          log.recipe = QString::fromStdString(j.value("recipe", ""));
          log.compiled = j.value("compile", false);
          log.dtype = QString::fromStdString(j.value("dtype", ""));
          log.setup = QString::fromStdString(j.value("setup", ""));
          if (!j.value("resume", false) || !log.started.isValid())
            log.started = QDateTime::fromString(QString::fromStdString(j.value("time", "")), Qt::ISODate);
        }
        if (event == "checkpoint")
          checkpoints.emplace_back(j.value("step", lastStep), QString::fromStdString(j.value("path", "")));
        if (event == "end") {
          ended = true;
          log.endStatus = QString::fromStdString(j.value("status", ""));
          log.endMessage = QString::fromStdString(j.value("message", ""));
        }
        continue;
      }
      if (!j.contains("step")) continue;
      const auto m = tb::training::step_metrics_from_json(j);
      if (m.step <= lastStep) {
        byStep.erase(byStep.lower_bound(m.step), byStep.end());
        checkpoints.erase(std::remove_if(checkpoints.begin(), checkpoints.end(),
                                         [&](const auto& c) { return c.first >= m.step; }),
                          checkpoints.end());
      }
      lastStep = m.step;
      byStep[m.step] = m;
    } catch (const std::exception& e) {
      log.errors << QString("%1:%2: %3").arg(log.path).arg(lineNo).arg(e.what());
    }
  }
  for (auto& [step, m] : byStep) log.steps.push_back(m);
  for (const auto& c : checkpoints) log.checkpoints << c.second;
  return log;
}

namespace {
qint64 folderSize(const QString& path) {
  qint64 total = 0;
  QDirIterator it(path, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    it.next();
    total += it.fileInfo().size();
  }
  return total;
}
}  // namespace

QVector<CheckpointEntry> scanCheckpoints(const QString& outputDir) {
  QVector<CheckpointEntry> out;
  static const QRegularExpression kName(R"(^(step|epoch)_(\d+)$)");
  for (const auto& info : tb::training::list_checkpoints(outputDir.toStdString())) {
    CheckpointEntry e;
    e.path = QString::fromStdString(info.path);
    e.name = QFileInfo(e.path).fileName();
    const auto m = kName.match(e.name);
    if (!m.hasMatch()) continue;
    if (m.captured(1) == "step") e.step = m.captured(2).toLongLong();
    if (m.captured(1) == "epoch") e.epoch = m.captured(2).toLongLong();
    e.complete = info.complete;
    if (info.complete) try {
      const auto& j = info.manifest;
      e.step = j.value("step", e.step);
      e.epoch = j.value("epoch", e.epoch);
      if (j.contains("loss") && j["loss"].is_number()) {
        e.loss = j["loss"].get<double>();
        e.hasLoss = true;
      }
      e.recipe = QString::fromStdString(j.value("recipe", ""));
      e.compile = j.value("compile", false);
      e.dtype = QString::fromStdString(j.value("dtype", ""));
    } catch (const std::exception&) {
      // A manifest with fields of other types: still complete, the table shows what it could read.
    }
    e.sizeBytes = folderSize(e.path);
    const QFileInfo manifest(QDir(e.path).filePath(tb::training::kManifestName));
    e.time = manifest.exists() ? manifest.lastModified() : QFileInfo(e.path).lastModified();
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) {
    return a.step != b.step ? a.step < b.step : a.name < b.name;
  });
  return out;
}

}  // namespace tb::ui
