// The distributed recipes as a user runs them: `tunebench-cli run --nproc-per-node 2` starts two real
// worker processes that rendezvous over loopback (c10d's TCPStore) and sum their gradients with Gloo.
// Checked against the single-process run at the doubled batch (the same updates, so the same losses),
// resumed on 2 and on 1 process, and for the faults a user meets: a worker killed mid-run, a port taken.
#include <QElapsedTimer>
#include <QtTest>

#include "test_main.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "recipe_test_support.h"
#include "config/schema.h"
#include "distributed/launcher.h"
#include "training/run_checkpoint.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  QString out, err;
};

// The steps and events of a run's metrics.jsonl.
struct Log {
  std::vector<double> losses;
  std::vector<nlohmann::json> events;
  nlohmann::json last(const std::string& kind) const {
    nlohmann::json found;
    for (const auto& e : events)
      if (e.value("event", "") == kind) found = e;
    return found;
  }
};

Log read_log(const QString& output_dir) {
  Log log;
  std::ifstream in((output_dir + "/logs/metrics.jsonl").toStdString());
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("event"))
      log.events.push_back(j);
    else if (j.contains("loss"))
      log.losses.push_back(j["loss"].get<double>());
  }
  return log;
}

// A synthetic-data run of the tiny model on seeded random weights, shuffled, with accumulation: 16 samples,
// `epochs` of 2 optimizer steps of 2 micro-batches.
tbtest::TinyConfig tiny(bool lora) {
  tbtest::TinyConfig c;
  if (lora) c.lora("tunebench.models.lora_llama_tiny_test");
  c.num_samples = 16;
  c.max_steps_per_epoch = 2;
  c.num_threads = 1;
  return c;
}

QString write_config(const QString& dir, const tbtest::TinyConfig& c, const QString& output) {
  const QString path = dir + "/config.yaml";
  std::string text = c.text(output.toStdString());
  text.replace(text.find("shuffle: false"), 14, "shuffle: true");  // each rank reads its part of a permutation
  std::ofstream(path.toStdString()) << text;
  return path;
}

bool near(const std::vector<double>& a, const std::vector<double>& b, double tolerance, QString* why) {
  if (a.size() != b.size()) {
    *why = QString("%1 steps against %2").arg(a.size()).arg(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tolerance)) {
      *why = QString("step %1: loss %2 against %3").arg(i + 1).arg(a[i], 0, 'g', 10).arg(b[i], 0, 'g', 10);
      return false;
    }
  return true;
}

}  // namespace

class TestDistributed : public QObject {
  Q_OBJECT

  Result run(const QStringList& args, int timeout_ms = 120000) {
    QProcess p;
    p.start(cli_, args);
    if (!p.waitForFinished(timeout_ms)) {
      p.kill();
      p.waitForFinished();
      qWarning("tunebench-cli %s timed out", qPrintable(args.join(' ')));
      return {};
    }
    Result r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
  }

  // Runs `recipe` on `config` with the overrides, on `nproc` workers (0: this process, no launcher).
  Result train(int nproc, const QString& recipe, const QString& config, const QStringList& overrides) {
    QStringList args{"run"};
    if (nproc > 0) args << "--nproc-per-node" << QString::number(nproc);
    args << recipe << "--config" << config;
    return run(args + overrides);
  }

  QString cli_;

 private Q_SLOTS:
  void initTestCase() {
    cli_ = qEnvironmentVariable("TB_CLI");
    QVERIFY2(QFileInfo(cli_).isExecutable(), "TB_CLI must name the tunebench-cli binary");
  }

  // N processes at batch b take the steps one process takes at N x b: the same losses, step after step.
  void twoProcessesTrainAsOneAtTheDoubledBatch_data() {
    QTest::addColumn<bool>("lora");
    QTest::addColumn<bool>("compile");
    QTest::newRow("full") << false << false;
    QTest::newRow("lora") << true << false;
    QTest::newRow("full, compiled") << false << true;  // each rank compiles; rank 0's plan runs on both
  }
  void twoProcessesTrainAsOneAtTheDoubledBatch() {
    QFETCH(bool, lora);
    QFETCH(bool, compile);
    const QString kind = lora ? "lora" : "full";
    QTemporaryDir dir;
    tbtest::TinyConfig c = tiny(lora);
    if (compile) c.extra = "compile: true\n";
    const QString config = write_config(dir.path(), c, dir.filePath("unused"));
    const Result two = train(2, kind + "_finetune_distributed", config, {"output_dir=" + dir.filePath("two"), "batch_size=2"});
    QVERIFY2(two.code == 0, qPrintable(two.err));
    QVERIFY2(two.err.contains("started 2 workers of 2"), qPrintable(two.err));
    const Result one = train(0, kind + "_finetune_single_device", config, {"output_dir=" + dir.filePath("one"), "batch_size=4"});
    QVERIFY2(one.code == 0, qPrintable(one.err));

    const Log a = read_log(dir.filePath("two")), b = read_log(dir.filePath("one"));
    QCOMPARE(a.losses.size(), size_t{4});
    if (compile) {
      QVERIFY2(a.last("compile").value("fallback", true) == false, a.last("compile").dump().c_str());
      QVERIFY2(b.last("compile").value("fallback", true) == false, b.last("compile").dump().c_str());
    }
    QString why;
    QVERIFY2(near(a.losses, b.losses, 1e-5, &why), qPrintable(why));
    // Not the same run by accident: a rank that trained alone at batch 2 would see other losses.
    const Result alone = train(0, kind + "_finetune_single_device", config, {"output_dir=" + dir.filePath("alone"), "batch_size=2"});
    QVERIFY2(alone.code == 0, qPrintable(alone.err));
    QVERIFY(!near(read_log(dir.filePath("alone")).losses, b.losses, 1e-3, &why));

    // Rank 0 wrote the checkpoint, as the single process does, and recorded the world it came from.
    const auto manifest = tb::training::read_manifest(dir.filePath("two/epoch_1").toStdString());
    QVERIFY(manifest.has_value());
    QCOMPARE((*manifest)["world_size"].get<int>(), 2);
    QCOMPARE((*manifest)["recipe"].get<std::string>(), (kind + "_finetune_distributed").toStdString());
    bool reduced = false;
    for (const auto& e : a.events) reduced = reduced || e.value("message", "").find("all-reduce of the gradients over 2") != std::string::npos;
    QVERIFY(reduced);
  }

  // Two "machines" of one worker each (two launchers with --nnodes 2, here both on loopback): the ranks
  // come from --node-rank, and the run is the one-process run at the doubled batch.
  void twoNodesOfOneProcessEach() {
    QTemporaryDir dir;
    const QString config = write_config(dir.path(), tiny(false), dir.filePath("two"));
    const int port = tb::distributed::pick_free_port();
    QProcess node1;
    node1.setProcessChannelMode(QProcess::MergedChannels);
    node1.start(cli_, {"run", "--nproc-per-node", "1", "--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint",
                       QString("127.0.0.1:%1").arg(port), "full_finetune_distributed", "--config", config, "batch_size=2"});
    QVERIFY(node1.waitForStarted());
    const Result node0 = run({"run", "--nproc-per-node", "1", "--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                              "--master-port", QString::number(port), "full_finetune_distributed", "--config", config,
                              "batch_size=2"});
    QVERIFY(node1.waitForFinished(120000));
    const QString node1_out = QString::fromUtf8(node1.readAll());
    QVERIFY2(node0.code == 0, qPrintable(node0.err));
    QVERIFY2(node1.exitCode() == 0, qPrintable(node1_out));
    QVERIFY2(node0.err.contains("started 1 worker of 2 (rank 0 pid"), qPrintable(node0.err));
    QVERIFY2(node1_out.contains("started 1 worker of 2 (rank 1 pid"), qPrintable(node1_out));
    const Result one = train(0, "full_finetune_single_device", config, {"output_dir=" + dir.filePath("one"), "batch_size=4"});
    QVERIFY2(one.code == 0, qPrintable(one.err));
    QString why;
    QVERIFY2(near(read_log(dir.filePath("two")).losses, read_log(dir.filePath("one")).losses, 1e-5, &why), qPrintable(why));
  }

  // Rank 0's checkpoint continues the run on 2 processes, and on 1 at the same global batch.
  void resumesOnTwoAndOnOneProcess() {
    QTemporaryDir dir;
    const QString config = write_config(dir.path(), tiny(false), dir.filePath("unused"));
    const QString recipe = "full_finetune_distributed";
    const Result whole = train(2, recipe, config, {"output_dir=" + dir.filePath("whole"), "batch_size=2", "epochs=2"});
    QVERIFY2(whole.code == 0, qPrintable(whole.err));
    const Result half = train(2, recipe, config, {"output_dir=" + dir.filePath("half"), "batch_size=2", "epochs=1"});
    QVERIFY2(half.code == 0, qPrintable(half.err));
    const auto expected = read_log(dir.filePath("whole")).losses;
    QCOMPARE(expected.size(), size_t{4});
    const std::vector<double> second_epoch(expected.begin() + 2, expected.end());

    for (int nproc : {2, 1}) {
      const QString out = dir.filePath(QString("resumed%1").arg(nproc));
      fs::copy(dir.filePath("half").toStdString(), out.toStdString(), fs::copy_options::recursive);
      fs::remove(out.toStdString() + "/logs/metrics.jsonl");
      const QStringList overrides{"output_dir=" + out, "epochs=2", "resume_from_checkpoint=true",
                                  "batch_size=" + QString::number(4 / nproc)};
      if (nproc == 1) {
        // The global batch must stay what it was: one process at batch 2 is refused, and told the size.
        const Result wrong = train(0, recipe, config, QStringList(overrides).replaceInStrings("batch_size=4", "batch_size=2"));
        QVERIFY2(wrong.code == 1 && wrong.err.contains("2 processes x batch_size 2") && wrong.err.contains("set batch_size: 4"),
                 qPrintable(wrong.err));
      }
      const Result resumed = train(nproc == 2 ? 2 : 0, recipe, config, overrides);
      QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
      QString why;
      QVERIFY2(near(read_log(out).losses, second_epoch, 1e-5, &why), qPrintable(QString("%1 process(es): %2").arg(nproc).arg(why)));
    }
  }

  // A worker that dies ends the run: every worker stops, the launcher exits non-zero naming the rank, and
  // the newest complete checkpoint is whole (it resumes).
  void aKilledWorkerEndsTheRunAndKeepsTheCheckpoints() {
    QTemporaryDir dir;
    tbtest::TinyConfig c = tiny(false);
    c.epochs = 1000;
    c.extra = "save_every_n_steps: 2\n";
    const QString out = dir.filePath("out");
    const QString config = write_config(dir.path(), c, out);
    QProcess launcher;
    launcher.setProcessChannelMode(QProcess::MergedChannels);  // the launcher's lines and rank 0's, in order
    launcher.start(cli_, {"run", "--nproc-per-node", "2", "full_finetune_distributed", "--config", config, "batch_size=2"});
    QVERIFY(launcher.waitForStarted());
    // Wait for a checkpoint, then kill rank 1.
    QElapsedTimer timer;
    timer.start();
    while (!tb::training::newest_complete_checkpoint(out.toStdString()) && timer.elapsed() < 60000 &&
           launcher.state() == QProcess::Running)
      QTest::qWait(50);
    const QString err = QString::fromUtf8(launcher.readAll());  // (not inside QVERIFY2: its message is always built)
    QVERIFY2(launcher.state() == QProcess::Running, qPrintable(err));
    const QRegularExpression pid_re("rank 1 pid (\\d+)");
    const auto match = pid_re.match(err);
    QVERIFY2(match.hasMatch(), qPrintable(err));
    QCOMPARE(::kill(match.captured(1).toInt(), SIGKILL), 0);
    timer.restart();
    QVERIFY(launcher.waitForFinished(60000));
    const qint64 ended_ms = timer.elapsed();
    QCOMPARE(launcher.exitStatus(), QProcess::NormalExit);
    QCOMPARE(launcher.exitCode(), 1);
    const QString rest = err + QString::fromUtf8(launcher.readAll());
    QVERIFY2(rest.contains("run failed: rank 1 (pid") && rest.contains("signal 9"), qPrintable(rest.right(600)));
    QVERIFY2(ended_ms < 60000, qPrintable(QString::number(ended_ms)));
    // Rank 0 noticed, said so and ended cleanly: no crash while it unwound with sums in flight.
    QVERIFY2(rest.contains("another rank is gone"), qPrintable(rest.right(600)));
    for (const char* crash : {"terminate called", "Segmentation fault", "Aborted"})
      QVERIFY2(!rest.contains(crash), qPrintable(rest.right(600)));
    qInfo("the run ended %lld ms after rank 1 was killed", static_cast<long long>(ended_ms));
    // Rank 0's log says the run failed.
    const auto end = read_log(out).last("end");
    QVERIFY2(end.value("status", "") == "failed", end.dump().c_str());

    const auto newest = tb::training::newest_complete_checkpoint(out.toStdString());
    QVERIFY(newest.has_value());
    const Result resumed = train(2, "full_finetune_distributed", config,
                                 {"batch_size=2", "resume_from_checkpoint=true", "epochs=" + QString::number(newest->manifest["epoch"].get<int>() + 1)});
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
  }

  // A worker that hangs (stopped here with SIGSTOP) ends the run once the process group's timeout passes.
  void aHungWorkerEndsTheRunAfterTheTimeout() {
    QTemporaryDir dir;
    tbtest::TinyConfig c = tiny(false);
    c.epochs = 1000;
    const QString config = write_config(dir.path(), c, dir.filePath("out"));
    QProcess launcher;
    launcher.setProcessChannelMode(QProcess::MergedChannels);
    launcher.start(cli_, {"run", "--nproc-per-node", "2", "--dist-timeout", "3", "full_finetune_distributed", "--config",
                          config, "batch_size=2"});
    QVERIFY(launcher.waitForStarted());
    QString out;
    QElapsedTimer timer;
    timer.start();
    while (!out.contains("step 2/") && timer.elapsed() < 60000 && launcher.state() == QProcess::Running) {
      QTest::qWait(50);
      out += QString::fromUtf8(launcher.readAll());
    }
    const auto match = QRegularExpression("rank 1 pid (\\d+)").match(out);
    QVERIFY2(match.hasMatch() && launcher.state() == QProcess::Running, qPrintable(out));
    QCOMPARE(::kill(match.captured(1).toInt(), SIGSTOP), 0);
    timer.restart();
    QVERIFY(launcher.waitForFinished(60000));
    out += QString::fromUtf8(launcher.readAll());
    QCOMPARE(launcher.exitCode(), 1);
    QVERIFY2(out.contains("did not answer for 3 s") && out.contains("killing rank 1"), qPrintable(out.right(900)));
    qInfo("the run ended %lld ms after rank 1 hung", static_cast<long long>(timer.elapsed()));
  }

  // Ctrl-C (SIGINT to the launcher) stops every worker after the step they agree on; rank 0 saves it.
  void aStopRequestStopsEveryWorkerAndSaves() {
    QTemporaryDir dir;
    tbtest::TinyConfig c = tiny(false);
    c.epochs = 1000;
    const QString out_dir = dir.filePath("out");
    const QString config = write_config(dir.path(), c, out_dir);
    QProcess launcher;
    launcher.setProcessChannelMode(QProcess::MergedChannels);
    launcher.start(cli_, {"run", "--nproc-per-node", "2", "full_finetune_distributed", "--config", config, "batch_size=2"});
    QVERIFY(launcher.waitForStarted());
    QString out;
    QElapsedTimer timer;
    timer.start();
    while (!out.contains("step 3/") && timer.elapsed() < 60000 && launcher.state() == QProcess::Running) {
      QTest::qWait(20);
      out += QString::fromUtf8(launcher.readAll());
    }
    QCOMPARE(::kill(static_cast<pid_t>(launcher.processId()), SIGINT), 0);
    QVERIFY(launcher.waitForFinished(60000));
    out += QString::fromUtf8(launcher.readAll());
    QVERIFY2(launcher.exitStatus() == QProcess::NormalExit && launcher.exitCode() == 0, qPrintable(out));
    const Log log = read_log(out_dir);
    QCOMPARE(log.last("end").value("status", ""), std::string("stopped"));
    const auto saved = tb::training::newest_complete_checkpoint(out_dir.toStdString());
    QVERIFY(saved.has_value());
    QCOMPARE(saved->step, static_cast<int64_t>(log.losses.size()));  // the step both ranks stopped after
    QVERIFY2(!out.contains("rank 1: run failed"), qPrintable(out));
  }

  // Each worker's num_threads default is its part of the cores (torchrun's LOCAL_WORLD_SIZE, else WORLD_SIZE).
  void threadsDefaultToTheWorkersPartOfTheCores() {
    auto threads = [] {  // as a worker loads its config: with the launcher's environment
      const auto loaded = tbtest::load_config(tiny(false).text("/tmp/unused"), "full_finetune_distributed", {"~num_threads"});
      return loaded.ok() ? tb::config::setting_int(*loaded.config, "num_threads") : int64_t{-1};
    };
    const int cores = std::max(1, QThread::idealThreadCount());
    const QByteArray before = qgetenv("LOCAL_WORLD_SIZE");
    qunsetenv("LOCAL_WORLD_SIZE");
    QCOMPARE(threads(), int64_t(cores));
    qputenv("LOCAL_WORLD_SIZE", "2");
    QCOMPARE(threads(), int64_t(std::max(1, cores / 2)));
    qputenv("LOCAL_WORLD_SIZE", QByteArray::number(cores * 4));
    QCOMPARE(threads(), int64_t(1));
    if (before.isEmpty()) qunsetenv("LOCAL_WORLD_SIZE"); else qputenv("LOCAL_WORLD_SIZE", before);
  }

  void aPortInUseIsAClearError() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    QVERIFY(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    QCOMPARE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    QCOMPARE(::listen(fd, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    const int port = ntohs(addr.sin_port);
    QTemporaryDir dir;
    const QString config = write_config(dir.path(), tiny(false), dir.filePath("out"));
    const Result r = run({"run", "--nproc-per-node", "2", "--master-port", QString::number(port), "full_finetune_distributed",
                          "--config", config});
    ::close(fd);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.count('\n') == 1 && r.err.contains(QString("port %1 is already in use").arg(port)), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(dir.filePath("out/logs/metrics.jsonl")));  // nothing started

    // A single-device recipe has no workers to start.
    const Result single = run({"run", "--nproc-per-node", "2", "full_finetune_single_device", "--config", config});
    QVERIFY2(single.code == 1 && single.err.contains("runs a distributed recipe"), qPrintable(single.err));
  }
};

TB_TEST(TestDistributed)
#include "test_distributed.moc"
