// Metric loggers: the JSONL format read back, the progress line and its ETA (steady steps only),
// callbacks, fan-out, and loggers built from a config.
#include <QtTest>

#include "test_main.h"

#include <fstream>
#include <sstream>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "training/metric_loggers.h"

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

}  // namespace

class TestMetricLoggers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void jsonHasTheDesignKeys() {
    StepMetrics m = step(7, 20, 0.5, Phase::Warmup);
    m.epoch = 1;
    m.peak_memory_gib = 1.25;
    nlohmann::json j = to_json(m);
    for (const char* key : {"step", "epoch", "loss", "lr", "tokens_per_second", "step_time_s", "peak_memory_gib", "phase"})
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
    QCOMPARE(lines[0], QString("step 1/10 | epoch 0 | loss 2.5000 | lr 2.0e-05 | 200 tok/s | 5.00 s/step | ETA -- (warm-up)"));
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
};

TB_TEST(TestMetricLoggers)
#include "test_metric_loggers.moc"
