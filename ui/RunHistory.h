// What a run left on disk, read back for the GUI: the metrics stream <output_dir>/logs/metrics.jsonl
// and the checkpoint folders with their manifests. Plain values, no widgets.
#pragma once

#include <QDateTime>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <vector>

#include "training/metrics.h"

namespace tb::ui {

struct RunLog {
  QString path;                                  // the metrics.jsonl read
  std::vector<tb::training::StepMetrics> steps;  // by step, of the latest run (with what a resume kept)
  double compileSeconds = -1;                    // from the last `compile` event, -1 when none
  QString recipe;                                // from the `start` event (empty in logs from before it existed)
  bool compiled = false;                         // the start event's compile (else: a compile event was seen)
  QString dtype;
  int threads = 0;                               // the start event's threads (0 in logs from before it existed)
  QString setup;                                 // the start event's setup key: runs of one setup share it
  QDateTime started;                             // when the run (not a resume of it) started; invalid if unknown
  QString endStatus;                             // completed, stopped, failed; empty while running
  QString endMessage;
  QStringList checkpoints;                       // paths from `checkpoint` events of those steps
  QStringList errors;                            // "file:line: message" for lines that are not valid JSON
  int warmupSteps() const;
  // The median tokens/s over steady steps (0 when there is none).
  double medianSteadyTokensPerSecond() const;
  double medianSteadyStepSeconds() const;
  double peakMemoryGib() const;  // the largest peak over its steps (0 when none was measured)
  // The run's folder (the parent of logs/).
  QString folder() const;
};

// How the run stands: its end status (completed, stopped, failed); "running" while its process holds the
// folder's lock; else "interrupted at step N" (its process is gone without an `end` event).
QString runStatusText(const RunLog& log);

// `path` is a run's output folder, its logs/ folder, or the metrics.jsonl file itself.
QString metricsFileOf(const QString& path);
RunLog readRunLog(const QString& path);

struct CheckpointEntry {
  QString path;
  QString name;          // step_4, epoch_0
  bool complete = false; // its manifest exists (written last)
  qint64 step = -1;
  qint64 epoch = -1;
  double loss = 0;
  bool hasLoss = false;
  QString recipe;
  bool compile = false;
  QString dtype;
  qint64 sizeBytes = 0;
  QDateTime time;        // when the manifest (else the folder) was written
};

// Every step_N / epoch_N folder of an output folder, complete or not, by step then name.
QVector<CheckpointEntry> scanCheckpoints(const QString& outputDir);

}  // namespace tb::ui

Q_DECLARE_METATYPE(tb::ui::CheckpointEntry)
