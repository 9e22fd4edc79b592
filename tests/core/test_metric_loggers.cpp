// Metric loggers: the JSONL format read back, the progress line and its ETA (steady steps only),
// callbacks, fan-out, loggers built from a config, TensorBoard's event files read by an independent
// reader, the loggers refused for needing a service, log_level, and the profiler block.
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "training/metric_loggers.h"
#include "training/profiler_schedule.h"
#include "training/tensorboard_logger.h"

using namespace tb::training;

namespace {

StepMetrics step(int64_t n, int64_t total, double seconds, Phase phase, bool resumed = false) {
  StepMetrics m;
  m.step = n;
  m.total_steps = total;
  m.step_time_s = seconds;
  m.phase = phase;
  m.resumed_before = resumed;
  m.loss = 2.5;
  m.lr = 2e-5;
  m.tokens = 1000;
  m.tokens_per_second = seconds > 0 ? 1000 / seconds : 0;
  return m;
}

std::vector<nlohmann::json> read_jsonl(const QString& path) {
  std::ifstream in(path.toStdString());
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Enough of a recipe config for make_metric_logger; components are not looked up.
tb::config::Config config_with(const std::string& output_dir, const std::string& metric_logger_yaml) {
  std::string text = "output_dir: " + output_dir +
                     "\nmodel: {_component_: m}\ntokenizer: {_component_: t}\ncheckpointer: {_component_: c}\n"
                     "dataset: {_component_: d}\noptimizer: {_component_: o}\nloss: {_component_: l}\n"
                     "batch_size: 1\nepochs: 1\n" + metric_logger_yaml;
  tb::config::LoadOptions o;
  tb::config::LoadResult r = tb::config::load_text(text, "t.yaml", o);
  if (!r.ok()) qFatal("%s", tb::config::format_diagnostics(r.diagnostics).c_str());
  return *r.config;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What tests/reference/tfevents_reference.py reads from an event file.
tbtest::ProcessResult read_tfevents(const QString& path) {
  return tbtest::run_reference("tfevents_reference.py", {path});
}

QString fixture(const char* name) { return QString(TB_SOURCE_DIR) + "/tests/data/config/" + name; }

// `tunebench-cli run` of the tiny fixture into `output_dir`, with more overrides.
tbtest::ProcessResult run_tiny(const QString& output_dir, const QStringList& overrides) {
  const QStringList args = QStringList{"run",
                                       "full_finetune_single_device",
                                       "--config",
                                       fixture("tiny_random_full.yaml"),
                                       "output_dir=" + output_dir,
                                       "tokenizer.path=" TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model"} +
                           overrides;
  return tbtest::run_process(qEnvironmentVariable("TB_CLI"), args);
}

}  // namespace

class TestMetricLoggers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void jsonHasTheDesignKeys() {
    StepMetrics m = step(7, 20, 0.5, Phase::Warmup);
    m.epoch = 1;
    m.peak_memory_gib = 1.25;
    nlohmann::json j = to_json(m);
    for (const char* key :
         {"step", "epoch", "loss", "lr", "tokens_per_second", "step_time_s", "peak_memory_gib", "phase"})
      QVERIFY2(j.contains(key), key);
    QCOMPARE(j["phase"].get<std::string>(), std::string("warmup"));
    QCOMPARE(j["step"].get<int64_t>(), int64_t(7));
    QCOMPARE(j["tokens_per_second"].get<double>(), 2000.0);
    QCOMPARE(to_json(step(1, 1, 1, Phase::Steady))["phase"].get<std::string>(), std::string("steady"));
  }

  void jsonRoundTrip() {
    StepMetrics m = step(12, 40, 0.75, Phase::Steady, true);
    m.epoch = 2;
    m.loss = 1.0 / 3.0;
    m.peak_memory_gib = 3.5;
    StepMetrics back = step_metrics_from_json(nlohmann::json::parse(to_json(m).dump()));
    QCOMPARE(back.step, m.step);
    QCOMPARE(back.total_steps, m.total_steps);
    QCOMPARE(back.epoch, m.epoch);
    QCOMPARE(back.loss, m.loss);  // dump() keeps every digit of a double
    QCOMPARE(back.lr, m.lr);
    QCOMPARE(back.tokens_per_second, m.tokens_per_second);
    QCOMPARE(back.step_time_s, m.step_time_s);
    QCOMPARE(back.peak_memory_gib, m.peak_memory_gib);
    QCOMPARE(back.tokens, m.tokens);
    QCOMPARE(back.phase, Phase::Steady);
    QCOMPARE(back.resumed_before, true);
    QCOMPARE(step_metrics_from_json(nlohmann::json::parse(R"({"step":3,"phase":"warmup"})")).phase, Phase::Warmup);
  }

  void divergedLossIsNull() {
    StepMetrics m = step(1, 2, 1, Phase::Steady);
    m.loss = std::nan("");
    nlohmann::json j = to_json(m);
    QVERIFY(j["loss"].is_null());  // JSON has no NaN
    QVERIFY(std::isnan(step_metrics_from_json(j).loss));
  }

  void diskLoggerWritesJsonl() {
    QTemporaryDir dir;
    QString logs = dir.filePath("out/logs");
    {
      DiskLogger logger(logs.toStdString());
      QCOMPARE(QString::fromStdString(logger.path()), logs + "/metrics.jsonl");
      logger.log_event({{"event", "compile"}, {"seconds", 1.5}});
      logger.log_step(step(1, 3, 0.5, Phase::Warmup));
      // Flushed per line: another reader sees it while the logger is still open.
      auto seen = read_jsonl(logs + "/metrics.jsonl");
      QCOMPARE(seen.size(), size_t(2));
      logger.log_step(step(2, 3, 0.25, Phase::Steady));
    }
    {
      DiskLogger again(logs.toStdString());  // a resumed run appends
      again.log_event({{"event", "end"}, {"status", "completed"}});
    }
    auto lines = read_jsonl(logs + "/metrics.jsonl");
    QCOMPARE(lines.size(), size_t(4));
    QCOMPARE(lines[0]["event"].get<std::string>(), std::string("compile"));
    QCOMPARE(lines[0]["seconds"].get<double>(), 1.5);
    QCOMPARE(lines[1]["phase"].get<std::string>(), std::string("warmup"));
    QCOMPARE(step_metrics_from_json(lines[2]).step_time_s, 0.25);
    QCOMPARE(lines[2]["tokens_per_second"].get<double>(), 4000.0);
    QCOMPARE(lines[3]["status"].get<std::string>(), std::string("completed"));
  }

  // A folder name or a message with bytes that are not UTF-8 (a Latin-1 path) is logged with U+FFFD
  // in their place; nlohmann's dump() threw type_error 316 there and the run was lost at its first save.
  void bytesThatAreNotUtf8AreReplaced() {
    QTemporaryDir dir;
    const std::string bad = "caf\xe9/\xff\xfe";
    {
      DiskLogger logger(dir.filePath("logs").toStdString());
      logger.log_event({{"event", "checkpoint"}, {"path", "/runs/" + bad + "/epoch_0"}});
      logger.log_event({{"event", "end"}, {"status", "failed"}, {"message", "cannot read " + bad}});
    }
    const auto lines = read_jsonl(dir.filePath("logs/metrics.jsonl"));
    QCOMPARE(lines.size(), size_t(2));
    QCOMPARE(lines[0]["path"].get<std::string>(), std::string("/runs/caf\uFFFD/\uFFFD\uFFFD/epoch_0"));
    QCOMPARE(lines[1]["message"].get<std::string>(), std::string("cannot read caf\uFFFD/\uFFFD\uFFFD"));
  }

  void diskLoggerUnwritableFolderThrows() {
    QTemporaryDir dir;
    std::ofstream(dir.filePath("file").toStdString()) << "x";
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, DiskLogger(dir.filePath("file/logs").toStdString()));
  }

  // Durations chosen so the means are exact: warm-up steps take 5 s and 4 s and must not count.
  void etaUsesSteadyStepsOnly() {
    EtaEstimator eta;
    eta.observe(step(1, 10, 5.0, Phase::Warmup));
    QVERIFY(!eta.eta_seconds());
    eta.observe(step(2, 10, 4.0, Phase::Warmup));
    QVERIFY(!eta.eta_seconds());
    eta.observe(step(3, 10, 1.0, Phase::Steady));
    QCOMPARE(*eta.eta_seconds(), 7.0);  // 1 s x 7 steps left
    eta.observe(step(4, 10, 3.0, Phase::Steady));
    QCOMPARE(*eta.eta_seconds(), 12.0);  // mean 2 s x 6
    QCOMPARE(eta.steady_steps(), int64_t(2));
  }

  void etaRestartsAfterResume() {
    EtaEstimator eta;
    eta.observe(step(1, 10, 9.0, Phase::Steady));
    eta.observe(step(2, 10, 9.0, Phase::Steady));
    // Resumed at step 3 from a checkpoint: the steps before it are forgotten.
    eta.observe(step(3, 10, 0.5, Phase::Steady, true));
    QCOMPARE(*eta.eta_seconds(), 3.5);  // 0.5 s x 7
    eta.observe(step(4, 10, 1.5, Phase::Steady));
    QCOMPARE(*eta.eta_seconds(), 6.0);  // mean 1 s x 6
    // A step number going back is a resume too, even unflagged; a warm-up after it does not count.
    eta.observe(step(2, 10, 8.0, Phase::Warmup));
    QVERIFY(!eta.eta_seconds());
    eta.observe(step(3, 10, 2.0, Phase::Steady));
    QCOMPARE(*eta.eta_seconds(), 14.0);
  }

  void etaUnknownWithoutTotal() {
    EtaEstimator eta;
    eta.observe(step(5, 0, 1.0, Phase::Steady));
    QVERIFY(!eta.eta_seconds());
  }

  void formatDuration_data() {
    QTest::addColumn<double>("seconds");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0.0 << "0s";
    QTest::newRow("rounds") << 59.4 << "59s";
    QTest::newRow("minute") << 61.0 << "1m01s";
    QTest::newRow("hours") << 3723.0 << "1h02m03s";
    QTest::newRow("negative") << -5.0 << "0s";
  }
  void formatDuration() {
    QFETCH(double, seconds);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(format_duration(seconds)), text);
  }

  void progressLine() {
    std::ostringstream out;
    StdoutLogger logger(out);
    logger.log_step(step(1, 10, 5.0, Phase::Warmup));
    logger.log_step(step(2, 10, 2.0, Phase::Steady));
    logger.log_event({{"event", "checkpoint"}, {"path", "runs/x/step_2"}});
    logger.log_event({{"event", "info"}, {"message", "starting from random weights"}});
    logger.log_event({{"event", "end"}, {"status", "stopped"}});
    QStringList lines = QString::fromStdString(out.str()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[0],
             QString("step 1/10 | epoch 0 | loss 2.5000 | lr 2.0e-05 | 200 tok/s | 5.00 s/step | ETA -- (warm-up)"));
    QCOMPARE(lines[1], QString("step 2/10 | epoch 0 | loss 2.5000 | lr 2.0e-05 | 500 tok/s | 2.00 s/step | ETA 16s"));
    QCOMPARE(lines[2], QString("checkpoint saved: runs/x/step_2"));
    QCOMPARE(lines[3], QString("starting from random weights"));
    QCOMPARE(lines[4], QString("run stopped"));
  }

  void compileLineSaysCacheHitAndFallback() {
    std::ostringstream out;
    StdoutLogger logger(out);
    logger.log_event({{"event", "compile"}, {"seconds", 2.3}, {"cache_hit", false}, {"fallback", false}});
    logger.log_event({{"event", "compile"}, {"seconds", 0.5}, {"cache_hit", true}, {"fallback", false}});
    logger.log_event({{"event", "compile"}, {"seconds", 1.0}, {"cache_hit", true}, {"fallback", true}});
    QStringList lines = QString::fromStdString(out.str()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], QString("compile: warm-up took 2.3 s"));
    QCOMPARE(lines[1], QString("compile: warm-up took 0.5 s (plan from the cache)"));
    QCOMPARE(lines[2], QString("compile: warm-up took 1.0 s (plan from the cache) (fell back to eager)"));
  }

  void progressLineOverwritesOnATerminal() {
    std::ostringstream out;
    StdoutLogger logger(out, true);
    logger.log_step(step(1, 2, 1.0, Phase::Steady));
    logger.log_step(step(2, 2, 1.0, Phase::Steady));
    logger.log_event({{"event", "end"}, {"status", "completed"}});
    std::string s = out.str();
    QCOMPARE(std::count(s.begin(), s.end(), '\r'), 2L);
    QVERIFY(s.find("ETA 0s\nrun completed\n") != std::string::npos);
  }

  void callbackAndFanOut() {
    std::vector<int64_t> steps_a, steps_b;
    std::vector<std::string> events;
    FanOutLogger fan;
    fan.add(std::make_shared<CallbackLogger>([&](const StepMetrics& m) { steps_a.push_back(m.step); },
                                             [&](const nlohmann::json& e) { events.push_back(e["event"]); }));
    fan.add(std::make_shared<CallbackLogger>([&](const StepMetrics& m) { steps_b.push_back(m.step * 10); }));
    fan.add(nullptr);  // ignored
    fan.log_step(step(1, 2, 1, Phase::Steady));
    fan.log_step(step(2, 2, 1, Phase::Steady));
    fan.log_event({{"event", "end"}});
    QCOMPARE(fan.size(), size_t(2));
    QVERIFY(fan.contains<CallbackLogger>());
    QVERIFY(!fan.contains<DiskLogger>());
    QCOMPARE(steps_a, (std::vector<int64_t>{1, 2}));
    QCOMPARE(steps_b, (std::vector<int64_t>{10, 20}));
    QCOMPARE(events, std::vector<std::string>{"end"});
  }

  void fromConfigDiskLogger() {
    QTemporaryDir dir;
    std::string out = dir.filePath("run").toStdString();
    auto cfg = config_with(out, "metric_logger:\n  _component_: DiskLogger\n  log_dir: ${output_dir}/mylogs\n");
    auto logger = make_metric_logger(cfg, tb::components::builtin());
    QCOMPARE(logger->size(), size_t(1));
    QVERIFY(logger->contains<DiskLogger>());
    logger->log_step(step(1, 1, 1, Phase::Steady));
    QCOMPARE(read_jsonl(dir.filePath("run/mylogs/metrics.jsonl")).size(), size_t(1));
  }

  void fromConfigStdoutLoggerStillWritesJsonl() {
    QTemporaryDir dir;
    std::string out = dir.filePath("run").toStdString();
    auto cfg = config_with(out, "metric_logger:\n  _component_: torchtune.training.metric_logging.StdoutLogger\n");
    auto logger = make_metric_logger(cfg, tb::components::builtin());
    QVERIFY(logger->contains<StdoutLogger>());
    QVERIFY(logger->contains<DiskLogger>());
    logger->log_event({{"event", "compile"}, {"seconds", 2}});
    QCOMPARE(read_jsonl(dir.filePath("run/logs/metrics.jsonl")).size(), size_t(1));
  }

  void fromConfigWithoutMetricLogger() {
    QTemporaryDir dir;
    auto cfg = config_with(dir.filePath("run").toStdString(), "");
    auto logger = make_metric_logger(cfg, tb::components::builtin());
    QCOMPARE(logger->size(), size_t(1));
    logger->log_step(step(1, 1, 1, Phase::Steady));
    QCOMPARE(read_jsonl(dir.filePath("run/logs/metrics.jsonl")).size(), size_t(1));
  }

  // ---- TensorBoard -------------------------------------------------------------------------------------------

  void crc32cCheckValues() {
    QCOMPARE(crc32c("123456789"), uint32_t(0xE3069283));            // the CRC-32C check value
    QCOMPARE(crc32c(std::string(32, '\0')), uint32_t(0x8A9136AA));  // RFC 3720 B.4: 32 bytes of zeros
    QCOMPARE(crc32c(""), uint32_t(0));
  }

  // Every tag, step and value, as an independent reader finds them (CRCs checked with python3-crc32c), read
  // while the logger is still open: a logged step is in the file at once.
  void tensorBoardEventsReadBack() {
    QVERIFY2(!tbtest::reference_python().isEmpty(), "python3 is needed for the reference (scripts/setup.sh test)");
    QTemporaryDir dir;
    const double before = unix_time();
    TensorBoardLogger logger(dir.path().toStdString());  // organize_logs, as torchtune: a run folder inside
    const QFileInfo file(QString::fromStdString(logger.path()));
    QVERIFY2(file.fileName().startsWith("events.out.tfevents."), qPrintable(file.filePath()));
    QVERIFY(file.dir().dirName().startsWith("run_0_"));
    QCOMPARE(QFileInfo(file.absolutePath()).absolutePath(), QFileInfo(dir.path()).absoluteFilePath());
    std::vector<StepMetrics> logged = {step(1, 3, 0.5, Phase::Warmup), step(2, 3, 0.25, Phase::Steady),
                                       step(3, 3, 0.125, Phase::Steady)};
    logged[0].loss = 2.75;
    logged[1].loss = 1.0 / 3.0;  // not exact in float: compared as the float it becomes
    logged[2].lr = 1e-4;
    logged[2].peak_memory_gib = 0.75;  // measured: logged too
    for (const auto& m : logged) logger.log_step(m);
    logger.log_event({{"event", "info"}, {"message", "not a scalar"}});  // nothing in TensorBoard

    const auto r = read_tfevents(file.filePath());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto events = nlohmann::json::parse(tbtest::last_line(r.out).toStdString())["events"];
    QCOMPARE(events.size(), size_t(4));
    QCOMPARE(events[0]["file_version"].get<std::string>(), std::string("brain.Event:2"));
    for (size_t i = 0; i < logged.size(); ++i) {
      const auto& e = events[i + 1];
      const StepMetrics& m = logged[i];
      QCOMPARE(e["step"].get<int64_t>(), m.step);
      const double wall = e["wall_time"].get<double>();
      QVERIFY2(wall >= before - 1 && wall <= unix_time() + 1, qPrintable(QString::number(wall, 'f')));
      std::map<std::string, double> want = {
          {"loss", m.loss}, {"lr", m.lr}, {"tokens_per_second", m.tokens_per_second}, {"step_time_s", m.step_time_s}};
      if (m.peak_memory_gib > 0) want["peak_memory_gib"] = m.peak_memory_gib;
      QCOMPARE(e["scalars"].size(), want.size());
      for (const auto& [tag, value] : want) {
        QVERIFY2(e["scalars"].contains(tag), tag.c_str());
        QCOMPARE(e["scalars"][tag].get<float>(), static_cast<float>(value));
      }
    }
  }

  // The negative control: the reader does check the CRCs (of a length, of a record, the last byte).
  void tensorBoardReaderRejectsAFlippedByte() {
    QVERIFY2(!tbtest::reference_python().isEmpty(), "python3 is needed for the reference (scripts/setup.sh test)");
    QTemporaryDir dir;
    std::string path;
    {
      TensorBoardLogger logger(dir.path().toStdString(), false);
      QCOMPARE(QFileInfo(QString::fromStdString(logger.path())).absolutePath(),
               QFileInfo(dir.path()).absoluteFilePath());
      logger.log_step(step(1, 2, 0.5, Phase::Steady));
      logger.log_step(step(2, 2, 0.5, Phase::Steady));
      path = logger.path();
    }
    const std::string bytes = tbtest::read_file(path);
    uint64_t first_length = 0;
    for (int i = 7; i >= 0; --i) first_length = first_length << 8 | static_cast<unsigned char>(bytes[i]);
    const size_t second = 12 + first_length + 4;  // where the second record's frame starts
    QVERIFY(second + 16 < bytes.size());
    for (size_t offset : {second, second + 12 + 3, bytes.size() - 1}) {
      std::string flipped = bytes;
      flipped[offset] = static_cast<char>(flipped[offset] ^ 0x10);
      const QString copy = dir.filePath("flipped");
      tbtest::write_file(copy.toStdString(), flipped);
      const auto r = read_tfevents(copy);
      QVERIFY2(r.code == 1 && r.err.contains("CRC mismatch"),
               qPrintable(QString::number(offset) + ": " + r.err + r.out));
    }
    QCOMPARE(read_tfevents(QString::fromStdString(path)).code, 0);
  }

  void fromConfigTensorBoardLogger() {
    QTemporaryDir dir;
    auto cfg = config_with(dir.filePath("run").toStdString(),
                           "metric_logger:\n  _component_: torchtune.training.metric_logging.TensorBoardLogger\n"
                           "  log_dir: ${output_dir}/tb\n  organize_logs: false\n");
    auto logger = make_metric_logger(cfg, tb::components::builtin());
    QVERIFY(logger->contains<TensorBoardLogger>());
    QVERIFY(logger->contains<DiskLogger>());  // metrics.jsonl next to the event file
    logger->log_step(step(1, 1, 1, Phase::Steady));
    QCOMPARE(read_jsonl(dir.filePath("run/tb/metrics.jsonl")).size(), size_t(1));
    QCOMPARE(QDir(dir.filePath("run/tb")).entryList({"events.out.tfevents.*"}, QDir::Files).size(), 1);
  }

  // ---- loggers that need a service ---------------------------------------------------------------------------

  void serviceLoggersRefused_data() {
    QTest::addColumn<QString>("component");
    for (const char* name : {"torchtune.training.metric_logging.WandBLogger", "WandBLogger",
                             "torchtune.training.metric_logging.CometLogger", "CometLogger"})
      QTest::newRow(name) << name;
  }
  // At validation, before anything runs, with torchtune's arguments; and if built anyway, the same line.
  void serviceLoggersRefused() {
    QFETCH(QString, component);
    const QString line = "needs a network service; use DiskLogger or TensorBoardLogger";
    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = "full_finetune_single_device";
    options.overrides = {"metric_logger._component_=" + component.toStdString(), "metric_logger.project=tunebench"};
    const auto loaded = tb::config::load_file(fixture("tiny_random_full.yaml").toStdString(), options);
    QVERIFY(!loaded.ok());
    QCOMPARE(loaded.diagnostics.size(), size_t(1));
    const QString message = QString::fromStdString(loaded.diagnostics[0].format());
    QVERIFY2(message.contains(line) && !message.contains('\n'), qPrintable(message));

    QTemporaryDir dir;
    auto cfg = config_with(dir.filePath("run").toStdString(),
                           "metric_logger:\n  _component_: " + component.toStdString() + "\n");
    try {
      make_metric_logger(cfg, tb::components::builtin());
      QFAIL("built a logger that needs a service");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains(line), e.what());
    }
  }

  // ---- log_level ---------------------------------------------------------------------------------------------

  void logLevelFiltersTheConsole_data() {
    QTest::addColumn<QString>("level");
    QTest::addColumn<QStringList>("lines");
    const QString step_line = "step 1/10 | epoch 0 | loss 2.5000 | lr 2.0e-05 | 500 tok/s | 2.00 s/step | ETA 18s";
    const QStringList warning_and_ends = {"warning: disk is slow", "run completed", "run failed: boom"};
    QTest::newRow("DEBUG") << "DEBUG" << QStringList{step_line, "loaded"} + warning_and_ends;
    QTest::newRow("INFO") << "INFO" << QStringList{step_line, "loaded"} + warning_and_ends;
    QTest::newRow("WARNING") << "WARNING" << warning_and_ends;
    QTest::newRow("warn") << "warn" << warning_and_ends;  // torchtune upper-cases the name
    QTest::newRow("ERROR") << "ERROR" << QStringList{"run failed: boom"};
    QTest::newRow("CRITICAL") << "CRITICAL" << QStringList{};
  }
  // The fan hands the level to a console logger added before it was set and to one added after (the CLI's).
  void logLevelFiltersTheConsole() {
    QFETCH(QString, level);
    QFETCH(QStringList, lines);
    std::ostringstream before, after;
    FanOutLogger fan;
    fan.add(std::make_shared<StdoutLogger>(before));
    fan.set_log_level(parse_log_level(level.toStdString()));
    fan.add(std::make_shared<StdoutLogger>(after));
    fan.log_step(step(1, 10, 2.0, Phase::Steady));
    fan.log_event({{"event", "info"}, {"message", "loaded"}});
    fan.log_event({{"event", "warning"}, {"message", "disk is slow"}});
    fan.log_event({{"event", "end"}, {"status", "completed"}});
    fan.log_event({{"event", "end"}, {"status", "failed"}, {"message", "boom"}});
    QCOMPARE(QString::fromStdString(before.str()).split('\n', Qt::SkipEmptyParts), lines);
    QCOMPARE(QString::fromStdString(after.str()).split('\n', Qt::SkipEmptyParts), lines);
  }

  void logLevelUnknownIsRejected() {
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, parse_log_level("VERBOSE"));
    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = "full_finetune_single_device";
    options.overrides = {"log_level=VERBOSE"};
    const auto loaded = tb::config::load_file(fixture("tiny_random_full.yaml").toStdString(), options);
    QVERIFY(!loaded.ok());
    QVERIFY2(tb::config::format_diagnostics(loaded.diagnostics).find("log_level") != std::string::npos,
             tb::config::format_diagnostics(loaded.diagnostics).c_str());
    options.overrides = {"log_level=DEBUG"};
    QVERIFY(tb::config::load_file(fixture("tiny_random_full.yaml").toStdString(), options).ok());
  }

  // A real run through the CLI: WARNING hides the step lines and info, keeps the warning and the end;
  // metrics.jsonl still gets everything. INFO (the default) shows the step lines.
  void logLevelWarningOnARun() {
    QVERIFY2(QFileInfo(qEnvironmentVariable("TB_CLI")).isExecutable(), "TB_CLI must name the tunebench-cli binary");
    QTemporaryDir dir;
    const auto quiet = run_tiny(dir.filePath("quiet"), {"log_level=WARNING", "enable_activation_offloading=True"});
    QVERIFY2(quiet.code == 0, qPrintable(quiet.err + quiet.out));
    const QStringList lines = quiet.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 2, qPrintable(quiet.out));
    QVERIFY2(lines[0].startsWith("warning: enable_activation_offloading: True is accepted"), qPrintable(quiet.out));
    QCOMPARE(lines[1], QString("run completed"));
    int steps = 0, infos = 0;
    for (const auto& j : read_jsonl(dir.filePath("quiet/logs/metrics.jsonl"))) {
      steps += j.contains("loss");
      infos += j.value("event", "") == "info";
    }
    QCOMPARE(steps, 3);
    QVERIFY(infos > 0);

    const auto loud = run_tiny(dir.filePath("loud"), {});
    QVERIFY2(loud.code == 0, qPrintable(loud.err + loud.out));
    QVERIFY2(loud.out.contains("step 1/3 | ") && loud.out.contains("step 3/3 | "), qPrintable(loud.out));
  }

  // ---- the profiler block ------------------------------------------------------------------------------------

  void profilerSchedule_data() {
    QTest::addColumn<QList<int>>("wait_warmup_active_cycles");
    QTest::addColumn<QList<int>>("traced");  // of steps 0..15
    QTest::addColumn<QList<int>>("ends");
    // torch.profiler.schedule(wait, warmup, active, repeat), checked against PyTorch's own function.
    QTest::newRow("torchtune's defaults") << QList<int>{5, 5, 2, 1} << QList<int>{10, 11} << QList<int>{11};
    QTest::newRow("one step") << QList<int>{1, 0, 1, 1} << QList<int>{1} << QList<int>{1};
    QTest::newRow("two cycles") << QList<int>{0, 1, 2, 2} << QList<int>{1, 2, 4, 5} << QList<int>{2, 5};
    QTest::newRow("back to back") << QList<int>{0, 0, 2, 2} << QList<int>{0, 1, 2, 3} << QList<int>{1, 3};
    QTest::newRow("repeating") << QList<int>{2, 1, 1, 0} << QList<int>{3, 7, 11, 15} << QList<int>{3, 7, 11, 15};
  }
  void profilerSchedule() {
    QFETCH(QList<int>, wait_warmup_active_cycles);
    QFETCH(QList<int>, traced);
    QFETCH(QList<int>, ends);
    ProfilerOptions o;
    o.wait_steps = wait_warmup_active_cycles[0];
    o.warmup_steps = wait_warmup_active_cycles[1];
    o.active_steps = wait_warmup_active_cycles[2];
    o.num_cycles = wait_warmup_active_cycles[3];
    const ProfilerSchedule schedule(o);
    QList<int> seen_traced, seen_ends, seen_starts, want_starts;
    for (int s = 0; s < 16; ++s) {
      if (schedule.traces(s)) seen_traced << s;
      if (schedule.ends_trace(s)) seen_ends << s;
      if (schedule.starts_trace(s)) seen_starts << s;
      if (traced.contains(s) && (s == 0 || !traced.contains(s - 1) || ends.contains(s - 1))) want_starts << s;
    }
    QCOMPARE(seen_traced, traced);
    QCOMPARE(seen_ends, ends);
    QCOMPARE(seen_starts, want_starts);
  }

  void profilerScheduleRefusesNoActiveSteps() {
    ProfilerOptions o;
    o.active_steps = 0;
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ProfilerSchedule{o});
  }

  // profiler.enabled: the scheduled step's Chrome trace in <output_dir>/profiling_outputs/iteration_<N>, with
  // the compiled step's fused kernels; a run that ends while tracing writes what it traced.
  void profilerWritesTheScheduledTrace() {
    QVERIFY2(QFileInfo(qEnvironmentVariable("TB_CLI")).isExecutable(), "TB_CLI must name the tunebench-cli binary");
    QTemporaryDir dir;
    const QStringList profiler = {"profiler._component_=torchtune.training.setup_torch_profiler",
                                  "profiler.enabled=true", "profiler.wait_steps=1", "profiler.warmup_steps=0",
                                  "profiler.num_cycles=1"};
    const auto r = run_tiny(dir.filePath("run"), profiler + QStringList{"profiler.active_steps=1", "compile=true"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QCOMPARE(QDir(dir.filePath("run/profiling_outputs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot),
             QStringList{"iteration_2"});  // step 2 traced: written once 2 steps are done
    auto trace_names = [](const QString& path) {
      const auto doc = nlohmann::json::parse(tbtest::read_file(path.toStdString()));  // throws if not JSON
      const auto& events = doc.is_array() ? doc : doc.at("traceEvents");
      std::set<std::string> names;
      for (const auto& e : events) names.insert(e.value("name", ""));
      return names;
    };
    const auto names = trace_names(dir.filePath("run/profiling_outputs/iteration_2/trace.json"));
    for (const char* kernel : {"tb::fused_linear_cross_entropy", "tb::fused_causal_attention", "tb::FusedAdamW::step"})
      QVERIFY2(names.count(kernel), kernel);

    // 5 active steps from step 2 of a 3-step run: steps 2 and 3 traced when the run ends.
    const auto cut = run_tiny(dir.filePath("cut"), profiler + QStringList{"profiler.active_steps=5"});
    QVERIFY2(cut.code == 0, qPrintable(cut.err + cut.out));
    QVERIFY2(cut.out.contains("profiler: steps 2-3 of this run traced in "), qPrintable(cut.out));
    const auto eager = trace_names(dir.filePath("cut/profiling_outputs/iteration_3/trace.json"));
    QVERIFY2(eager.count("aten::mm") || eager.count("aten::matmul"), "no matrix product in the eager trace");
  }
};

TB_TEST(TestMetricLoggers)
#include "test_metric_loggers.moc"
