#include "RunHistory.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <algorithm>
#include <map>

#include "training/output_lock.h"
#include "training/run_log.h"
#include "training/run_checkpoint.h"

namespace tb::ui {

int RunLog::warmupSteps() const { return tb::training::warmup_steps(steps); }
double RunLog::medianSteadyTokensPerSecond() const { return tb::training::median_steady_tokens_per_second(steps); }
double RunLog::medianSteadyStepSeconds() const { return tb::training::median_steady_step_seconds(steps); }
double RunLog::peakMemoryGib() const { return tb::training::peak_memory_gib(steps); }

QString RunLog::folder() const {
  QDir dir = QFileInfo(path).dir();
  if (dir.dirName() == "logs") dir.cdUp();
  return dir.absolutePath();
}

QString runStatusText(const RunLog& log) {
  if (!log.endStatus.isEmpty()) return log.endStatus;
  if (tb::training::output_dir_in_use(log.folder().toStdString())) return "running";
  return log.steps.empty() ? QString("interrupted before its first step")
                           : QString("interrupted at step %1").arg(log.steps.back().step);
}

QString metricsFileOf(const QString& path) {
  const QFileInfo info(path);
  if (info.isFile()) return info.absoluteFilePath();
  const QDir dir(path);
  if (QFileInfo(dir.filePath("logs/metrics.jsonl")).isFile()) return dir.filePath("logs/metrics.jsonl");
  if (QFileInfo(dir.filePath("metrics.jsonl")).isFile()) return dir.filePath("metrics.jsonl");
  return dir.filePath("logs/metrics.jsonl");
}

// The engine reads the log (training/run_log.h); this is its Qt-typed view.
RunLog readRunLog(const QString& path) {
  const tb::training::RunLog read = tb::training::read_run_log(metricsFileOf(path).toStdString());
  auto text = [](const std::string& s) { return QString::fromStdString(s); };
  auto list = [&](const std::vector<std::string>& v) {
    QStringList out;
    for (const auto& s : v) out << text(s);
    return out;
  };
  RunLog log;
  log.path = text(read.path);
  log.steps = read.steps;
  log.compileSeconds = read.compile_seconds;
  log.recipe = text(read.recipe);
  log.compiled = read.compiled;
  log.dtype = text(read.dtype);
  log.threads = int(read.threads);
  log.setup = text(read.setup);
  log.started = QDateTime::fromString(text(read.started), Qt::ISODate);
  log.endStatus = text(read.end_status);
  log.endMessage = text(read.end_message);
  log.checkpoints = list(read.checkpoints);
  log.errors = list(read.errors);
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
