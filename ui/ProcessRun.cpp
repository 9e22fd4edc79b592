#include "ProcessRun.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <csignal>

#include <sys/prctl.h>

#include "training/metric_loggers.h"

namespace tb::ui {

ProcessRun::ProcessRun(QObject* parent) : QObject(parent) {
  registerRunTypes();
  poll_.setInterval(200);
  connect(&poll_, &QTimer::timeout, this, &ProcessRun::readLog);
  connect(&process_, &QProcess::finished, this, &ProcessRun::onProcessFinished);
  process_.setProcessChannelMode(QProcess::SeparateChannels);
}

ProcessRun::~ProcessRun() {
  if (process_.state() != QProcess::NotRunning) {
    stop();
    if (!process_.waitForFinished(30000)) process_.kill();
    process_.waitForFinished(5000);
  }
}

QString ProcessRun::cliProgram() {
  const QString env = qEnvironmentVariable("TUNEBENCH_CLI");
  if (!env.isEmpty()) return env;
  const QDir here(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {here.filePath("tunebench-cli"), here.filePath("../bin/tunebench-cli")})
    if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).absoluteFilePath();
  return here.filePath("tunebench-cli");
}

bool ProcessRun::start(const tb::config::Config& config, const QString& recipe, int processes, QString* error) {
  config_.setFileTemplate(QDir::temp().filePath("tunebench-run-XXXXXX.yaml"));
  if (!config_.open() || config_.write(QByteArray::fromStdString(config.to_yaml())) < 0 || !config_.flush()) {
    if (error) *error = "cannot write the run's config to " + config_.fileName() + ": " + config_.errorString();
    return false;
  }
  const QString cli = cliProgram();
  if (!QFileInfo(cli).isExecutable()) {
    if (error) *error = "tunebench-cli, which starts the worker processes, is not at " + cli;
    return false;
  }
  logPath_ = QDir(QString::fromStdString(tb::training::metrics_log_dir(config))).filePath("metrics.jsonl");
  QFileInfo existing(logPath_);
  // A resumed run appends: only what it writes now.
  tail_ = std::make_unique<tb::training::LogTail>(logPath_.toStdString(), existing.exists() ? uint64_t(existing.size()) : 0);
  // The launcher ends with the window (a crash of it left the workers training): SIGINT is its Ctrl-C, a stop
  // after the current step, saved, as the Stop button gives.
  process_.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGINT); });
  process_.start(cli, {"run", "--nproc-per-node", QString::number(processes), recipe, "--config", config_.fileName()});
  if (!process_.waitForStarted(10000)) {
    if (error) *error = "cannot start " + cli + ": " + process_.errorString();
    return false;
  }
  poll_.start();
  return true;
}

void ProcessRun::stop() {
  if (process_.state() == QProcess::Running) ::kill(static_cast<pid_t>(process_.processId()), SIGINT);
}

void ProcessRun::readLog() {
  if (!tail_) return;
  for (const std::string& text : tail_->read_new_lines()) {
    std::optional<tb::training::LogLine> line;
    try {
      line = tb::training::parse_log_line(text);
    } catch (const std::exception&) {
      continue;  // a step the log could not say; the next ones still count
    }
    if (!line) continue;
    if (line->step) {
      outcome_.stepsDone = line->step->step;
      outcome_.lastLoss = line->step->loss;
      Q_EMIT stepLogged(*line->step);
      continue;
    }
    if (!line->event.is_object()) continue;
    const RunEvent e = runEventFromJson(line->event);
    if (e.kind == "checkpoint") outcome_.lastCheckpoint = e.path;
    if (e.kind == "end") {
      ended_ = true;
      outcome_.status = tb::training::run_status_from_text(e.status.toStdString());
      outcome_.message = e.message;
    }
    Q_EMIT eventLogged(e);
  }
}

void ProcessRun::onProcessFinished(int exitCode, QProcess::ExitStatus status) {
  poll_.stop();
  readLog();
  // The launcher's last line says why a run failed that rank 0's log does not (a worker killed, a port taken).
  const QString err = QString::fromUtf8(process_.readAllStandardError()).trimmed();
  const QString lastLine = err.section('\n', -1).remove(QRegularExpression("^tunebench-cli: "));
  if (status != QProcess::NormalExit || exitCode != 0) {
    outcome_.status = tb::training::RunStatus::Failed;
    if (!lastLine.isEmpty()) outcome_.message = lastLine;
    if (outcome_.message.isEmpty()) outcome_.message = "the worker processes ended with status " + QString::number(exitCode);
  } else if (!ended_) {
    outcome_.status = tb::training::RunStatus::Failed;
    outcome_.message = "the run ended without rank 0's log saying how (" + logPath_ + ")";
  }
  Q_EMIT finished(outcome_);
}

}  // namespace tb::ui
