// The real tunebench-cli binary (env TB_CLI): exit codes, messages, --help, and that it never dies on a
// signal.
#include <QElapsedTimer>
#include <QtTest>

#include "test_main.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "components/builtin.h"

#include <cmath>
#include <csignal>

#include "config/registry.h"
#include "recipe.h"
#include "training/run_checkpoint.h"

namespace {

struct Result {
  int code = -1;
  QString out, err;
};

QString fixture(const char* name) { return QString(TB_SOURCE_DIR) + "/tests/data/config/" + name; }

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

  Result run(const QStringList& args, const QString& cwd = {}) {
    QProcess p;
    if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("TUNEBENCH_SHARE_DIR");  // the binary finds <build>/share/tunebench by itself
    p.setProcessEnvironment(env);
    p.start(cli_, args);
    if (!p.waitForFinished(60000)) {
      p.kill();
      p.waitForFinished();
      qWarning("tunebench-cli %s timed out", qPrintable(args.join(' ')));
      return {};
    }
    Result r;
    // Never a signal: a crash would be CrashExit.
    if (p.exitStatus() != QProcess::NormalExit) qWarning("tunebench-cli %s died on a signal", qPrintable(args.join(' ')));
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
  }

  // A user error: exit 1 and exactly one line on stderr.
  void expectOneLineError(const Result& r, const QString& contains) {
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.endsWith('\n') && r.err.count('\n') == 1, qPrintable(r.err));
    QVERIFY2(r.err.contains(contains), qPrintable(r.err));
  }

  QString cli_;

 private Q_SLOTS:
  void initTestCase() {
    cli_ = qEnvironmentVariable("TB_CLI");
    QVERIFY2(QFileInfo(cli_).isExecutable(), "TB_CLI must name the tunebench-cli binary");
  }

  void help_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("top") << QStringList{"--help"} << "validate";
    QTest::newRow("ls") << QStringList{"ls", "--help"} << "ls";
    QTest::newRow("cp") << QStringList{"cp", "--help"} << "--force";
    QTest::newRow("validate") << QStringList{"validate", "--help"} << "overrides";
    QTest::newRow("run") << QStringList{"run", "--help"} << "--config";
    QTest::newRow("eval") << QStringList{"eval", "--help"} << "--config";
    QTest::newRow("generate") << QStringList{"generate", "--help"} << "--max-new-tokens";
    QTest::newRow("bench") << QStringList{"bench", "--help"} << "compile";
    QTest::newRow("bench compile") << QStringList{"bench", "compile", "--help"} << "--steps";
  }
  void help() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    Result r = run(args);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(mentions), qPrintable(r.out));
    QVERIFY2(r.out.contains("Usage"), qPrintable(r.out));
  }

  void usageErrors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("no command") << QStringList{} << "subcommand";
    QTest::newRow("unknown command") << QStringList{"trian"} << "unknown command 'trian' (commands: ls, cp, validate, run";
    QTest::newRow("misspelled command") << QStringList{"valdate", "x.yaml"} << "unknown command 'valdate' (did you mean 'validate'?)";
    QTest::newRow("missing config") << QStringList{"validate"} << "config";
    QTest::newRow("unknown option") << QStringList{"validate", "--bogus", "x.yaml"} << "--bogus";
    QTest::newRow("run without --config") << QStringList{"run", "full_finetune_single_device"} << "--config";
  }
  void usageErrors() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    expectOneLineError(run(args), mentions);
  }

  void validateWellFormedStructure() {
    Result r = run({"validate", "--no-components", fixture("llama2_lora_valid.yaml")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QString("Config is well-formed!\n"));
    QVERIFY(r.err.isEmpty());
  }

  void validateWellFormedWithComponents() {
    // Needs the model, data and training components the fixture names.
    const auto& reg = tb::components::builtin();
    for (const char* name : {"torchtune.models.llama2.lora_llama2_7b", "torchtune.models.llama2.llama2_tokenizer",
                             "torchtune.training.FullModelHFCheckpointer", "torchtune.datasets.alpaca_dataset",
                             "torch.optim.AdamW", "torchtune.modules.get_cosine_schedule_with_warmup",
                             "torchtune.modules.loss.CEWithChunkedOutputLoss"})
      QVERIFY2(reg.find(name), qPrintable(QString("component %1 is not registered").arg(name)));
    Result r = run({"validate", fixture("llama2_lora_valid.yaml")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QString("Config is well-formed!\n"));
  }

  void validateTypoInNestedKey() {
    Result r = run({"validate", fixture("typo_nested.yaml")});
    QCOMPARE(r.code, 1);
    // Line 41, column 3 of the fixture: "  log_dri: ${output_dir}/logs".
    QString expected = fixture("typo_nested.yaml") + ":41:3: unknown key 'log_dri' in metric_logger (did you mean 'log_dir'?)";
    QVERIFY2(r.err.contains(expected), qPrintable(r.err));
    QVERIFY(!r.out.contains("well-formed"));
  }

  void validateReportsEveryError() {
    Result r = run({"validate", "--no-components", "--recipe", "full_finetune_single_device", fixture("errors_types.yaml")});
    QCOMPARE(r.code, 1);
    // Without component checks, the seven top-level problems of the file, one per line, in file order.
    QCOMPARE(r.err.count('\n'), 7);
    QVERIFY2(r.err.startsWith(fixture("errors_types.yaml") + ":18:13: batch_size: "), qPrintable(r.err));
    QVERIFY2(r.err.endsWith(":29:22: max_steps_per_epoch: expected an integer, got the number 2.5\n"), qPrintable(r.err));
  }

  void validateWithOverrides() {
    Result ok = run({"validate", "--no-components", fixture("llama2_lora_valid.yaml"), "batch_size=8",
                     "optimizer.lr=1e-4", "~clip_grad_norm", "checkpointer.checkpoint_files=[a.safetensors,b.safetensors]"});
    QVERIFY2(ok.code == 0, qPrintable(ok.err));
    Result bad = run({"validate", "--no-components", fixture("llama2_lora_valid.yaml"), "batch_size=eight", "~nope"});
    QCOMPARE(bad.code, 1);
    QCOMPARE(bad.err, QString("override '~nope': cannot remove 'nope': the config has no key 'nope'\n"
                              "override 'batch_size=eight': batch_size: expected an integer, got the string 'eight'\n"));
  }

  void validateSyntaxError() {
    Result r = run({"validate", fixture("errors_syntax.yaml")});
    QCOMPARE(r.code, 1);
    QCOMPARE(r.err, fixture("errors_syntax.yaml") + ":4:10: YAML syntax error: illegal map value (a second ': ' on one line (quote the value), or a line indented deeper than the key above it)\n");
  }

  void validateMissingFile() {
    expectOneLineError(run({"validate", "no/such/config.yaml"}), "no/such/config.yaml: no such file or bundled config");
  }

  void validateBundledByName() {
    Result r = run({"validate", "--no-components", "llama2/7B_lora_single_device"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }

  void ls() {
    Result r = run({"ls"});
    QCOMPARE(r.code, 0);
    QStringList lines = r.out.split('\n');
    QVERIFY(lines.value(0).startsWith("RECIPE"));
    for (const char* name : {"llama2/7B_full_single_device", "llama3_2/1B_full_single_device", "llama3_1/8B_full_single_device",
                             "mistral/7B_full_single_device"}) {
      QVERIFY2(r.out.contains(name), name);
    }
    // Each config is listed under its recipe.
    int lora = lines.indexOf(QRegularExpression("^lora_finetune_single_device\\b.*"));
    int full = lines.indexOf(QRegularExpression("^full_finetune_single_device\\b.*"));
    QVERIFY(lora >= 0 && full >= 0);
    auto section = [&](int start) {
      QStringList out;
      for (int i = start; i < lines.size(); ++i) {
        if (i > start && !lines[i].startsWith(' ')) break;
        out << lines[i];
      }
      return out.join('\n');
    };
    QVERIFY2(section(lora).contains("llama2/7B_qlora_single_device"), qPrintable(r.out));
    QVERIFY2(section(lora).contains("mistral/7B_lora_single_device"), qPrintable(r.out));
    QVERIFY2(!section(lora).contains("7B_full_single_device"), qPrintable(r.out));
    QVERIFY2(section(full).contains("llama3_1/8B_full_single_device"), qPrintable(r.out));
  }

  void cp() {
    QTemporaryDir dir;
    QString dst = dir.filePath("my_lora.yaml");
    Result r = run({"cp", "llama2/7B_lora_single_device", dst});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QFile copied(dst), source(QString(TB_SOURCE_DIR) + "/configs/llama2/7B_lora_single_device.yaml");
    QVERIFY(copied.open(QIODevice::ReadOnly) && source.open(QIODevice::ReadOnly));
    QByteArray original = source.readAll();
    QCOMPARE(copied.readAll(), original);
    copied.close();

    // Never overwrites unless asked.
    QFile::resize(dst, 0);
    expectOneLineError(run({"cp", "llama2/7B_lora_single_device", dst}), "already exists (use --force");
    QCOMPARE(QFileInfo(dst).size(), qint64(0));
    Result forced = run({"cp", "--force", "llama2/7B_lora_single_device", dst});
    QCOMPARE(forced.code, 0);
    QCOMPARE(QFileInfo(dst).size(), qint64(original.size()));

    // .yaml is added, a folder receives the file under its own name, and no temporary file is left.
    QCOMPARE(run({"cp", "mistral/7B_full_single_device", dir.filePath("plain")}).code, 0);
    QVERIFY(QFileInfo::exists(dir.filePath("plain.yaml")));
    QDir(dir.path()).mkdir("sub");
    QCOMPARE(run({"cp", "mistral/7B_full_single_device", dir.filePath("sub")}).code, 0);
    QVERIFY(QFileInfo::exists(dir.filePath("sub/7B_full_single_device.yaml")));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);

    expectOneLineError(run({"cp", "llama2/nope", dir.filePath("x.yaml")}), "no bundled config or file named 'llama2/nope'");
    expectOneLineError(run({"cp", "llama2/7B_lora_single_device", dir.filePath("missing/x.yaml")}), "does not exist");
  }

  void runUnknownRecipe() {
    Result r = run({"run", "full_finetune_multi_device", "--config", fixture("llama2_lora_valid.yaml")});
    expectOneLineError(r, "unknown recipe 'full_finetune_multi_device' (known recipes: ");
    for (const auto& recipe : tb::recipes()) QVERIFY2(r.err.contains(QString::fromStdString(recipe.name)), qPrintable(r.err));
  }

  void runBadConfigIsUserError() {
    QVERIFY2(!tb::recipes().empty(), "no recipe is built in");
    Result r = run({"run", QString::fromStdString(tb::recipes().front().name), "--config", fixture("errors_syntax.yaml")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(":4:10: YAML syntax error"), qPrintable(r.err));
  }

  // A real run of the tiny test model from random weights (needs the full fine-tuning recipe).
  QStringList tinyRun(const QString& output_dir, const QStringList& extra = {}) {
    return QStringList{"run", "full_finetune_single_device", "--config", fixture("tiny_random_full.yaml"),
                       "output_dir=" + output_dir,
                       "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"} +
           extra;
  }

  // Starts the tiny run with a near-endless epoch into `out` and waits for its first logged step.
  bool startLongRun(QProcess& p, const QString& out) {
    p.start(cli_, tinyRun(out, {"dataset.num_samples=1000000", "max_steps_per_epoch=null"}));
    if (!p.waitForStarted()) return false;
    QElapsedTimer timer;
    timer.start();
    auto has_step = [&] {
      for (const QJsonObject& o : jsonLines(out + "/logs/metrics.jsonl"))
        if (o.contains("step") && !o.contains("event")) return true;
      return false;
    };
    while (!has_step() && timer.elapsed() < 60000 && p.state() == QProcess::Running) QTest::qWait(50);
    if (p.state() != QProcess::Running) qWarning("%s", p.readAllStandardError().constData());
    return p.state() == QProcess::Running && has_step();
  }

  static QList<QJsonObject> jsonLines(const QString& path) {
    QFile f(path);
    QList<QJsonObject> out;
    if (!f.open(QIODevice::ReadOnly)) return out;
    for (const QByteArray& line : f.readAll().split('\n'))
      if (!line.isEmpty()) out << QJsonDocument::fromJson(line).object();
    return out;
  }

  void runCompletes() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    Result r = run(tinyRun(dir.filePath("out")));
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("step 3/3 | epoch 0 | loss "), qPrintable(r.out));  // the progress line
    QList<QJsonObject> lines = jsonLines(dir.filePath("out/logs/metrics.jsonl"));
    int steps = 0;
    for (const QJsonObject& o : lines) steps += o.contains("step") && !o.contains("event");
    QCOMPARE(steps, 3);
    QCOMPARE(lines.last().value("event").toString(), QString("end"));
    QCOMPARE(lines.last().value("status").toString(), QString("completed"));
  }

  // num_threads far above the cores ran a step for minutes (threads waiting on each other): the run
  // uses the cores and says so.
  void moreThreadsThanCoresAreClamped() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    QStringList args = tinyRun(dir.filePath("out"));
    args << "num_threads=1000";
    QElapsedTimer timer;
    timer.start();
    Result r = run(args);
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    QVERIFY2((r.err + r.out).contains(QString("num_threads: 1000 asked, this machine has %1 cores").arg(cores)),
             qPrintable(r.err + r.out));
    QVERIFY2(timer.elapsed() < 120000, qPrintable(QString("%1 ms").arg(timer.elapsed())));
    const Result zero = run(QStringList(args.mid(0, args.size() - 1)) << "num_threads=0");
    QVERIFY2(zero.code != 0 && zero.err.contains("num_threads"), qPrintable(zero.err));
  }

  // An output folder whose name is not UTF-8 (Latin-1 "café" and a stray byte): the run completes and
  // its log says the path with U+FFFD; the JSON logger threw at the first save before.
  void runIntoAFolderNamedInLatin1() {
    QTemporaryDir dir;
    // The name's bytes cannot travel in a QString argument: a shell's printf makes them.
    QStringList args = tinyRun("OUT");
    for (QString& a : args) a = "'" + a + "'";
    const QString script = "out=\"$1/$(printf 'caf\\351_\\377')\"; exec \"$2\" " +
                           args.join(' ').replace("'output_dir=OUT'", "\"output_dir=$out\"");
    QProcess p;
    p.start("/bin/sh", {"-c", script, "sh", dir.path(), cli_});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
    // Qt cannot name such a folder (its names are UTF-8): std::filesystem keeps the bytes.
    std::vector<std::filesystem::path> made;
    for (const auto& e : std::filesystem::directory_iterator(dir.path().toStdString())) made.push_back(e.path());
    QCOMPARE(made.size(), size_t(1));
    QCOMPARE(made[0].filename().string(), std::string("caf\xe9_\xff"));
    std::ifstream log(made[0] / "logs" / "metrics.jsonl", std::ios::binary);
    QVERIFY(log.good());
    const QList<QByteArray> lines =
        QByteArray::fromStdString(std::string(std::istreambuf_iterator<char>(log), {})).trimmed().split('\n');
    const QJsonObject end = QJsonDocument::fromJson(lines.last()).object();
    QCOMPARE(end.value("status").toString(), QString("completed"));
    bool saved = false;
    for (const QByteArray& line : lines) {
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      if (o.value("event").toString() == "checkpoint")
        saved = o.value("path").toString().contains(QString("caf") + QChar(0xFFFD) + "_" + QChar(0xFFFD));
    }
    QVERIFY(saved);
  }

  // A LibTorch error during the run (here token ids past the tiny model's vocabulary) is its message,
  // one line; its C++ stack trace (some 30 lines) is not.
  void torchErrorDuringTheRunIsOneLine() {
    QTemporaryDir dir;
    const Result r = run(tinyRun(dir.filePath("out"), {"dataset._component_=torchtune.datasets.alpaca_dataset",
                                                       "dataset.source=json",
                                                       "dataset.data_files=" + QString(TB_SOURCE_DIR) +
                                                           "/resources/datasets/tiny_instruct.json",
                                                       "~dataset.seq_len", "~dataset.num_samples"}));
    expectOneLineError(r, "run failed: index out of range");
    QVERIFY2(!r.out.contains("Exception raised from"), qPrintable(r.out));
  }

  // A FIFO where a file is expected blocked `run` and `eval` forever (opening it waits for a writer):
  // now one line naming it, at once.
  void fifoInsteadOfAFileIsRefused_data() {
    QTest::addColumn<QString>("role");
    QTest::newRow("data file") << "data";
    QTest::newRow("config file") << "config";
    QTest::newRow("weights file") << "weights";
  }
  void fifoInsteadOfAFileIsRefused() {
    QFETCH(QString, role);
    QTemporaryDir dir;
    QString fifo = dir.filePath("pipe");
    if (role == "weights") {  // a checkpoint of the tiny run, its weights file replaced by a FIFO
      QCOMPARE(run(tinyRun(dir.filePath("first"))).code, 0);
      fifo = dir.filePath("first/epoch_0/model-00001-of-00001.safetensors");
      QVERIFY(QFile::remove(fifo));
    }
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QStringList args;
    if (role == "config") {
      args = {"validate", fifo};
    } else if (role == "data") {
      args = tinyRun(dir.filePath("out"), {"dataset._component_=torchtune.datasets.alpaca_dataset", "dataset.source=json",
                                           "dataset.data_files=" + fifo, "~dataset.seq_len", "~dataset.num_samples"});
    } else {
      args = tinyRun(dir.filePath("out"), {"checkpointer.checkpoint_dir=" + dir.filePath("first/epoch_0"),
                                           "checkpointer.checkpoint_files=[model-00001-of-00001.safetensors]"});
    }
    QElapsedTimer timer;
    timer.start();
    const Result r = run(args);
    QVERIFY2(r.code == 1 && r.err.contains("is a FIFO (named pipe), not a file"), qPrintable(r.err + r.out));
    QVERIFY(timer.elapsed() < 30000);
  }

  // Runs that cannot learn anything fail with the reason; they logged "loss 0.0000", saved and
  // reported "completed" before.
  void runsThatCannotLearnFail_data() {
    QTest::addColumn<QStringList>("overrides");
    QTest::addColumn<QString>("expected");
    // The bundled tiny config: its Alpaca prompt is longer than 8 tokens, so every response is cut off
    // and every sample is dropped (a step without label tokens would fail on its own as well).
    QTest::newRow("every label masked") << QStringList{"tokenizer.max_seq_len=8", "max_steps_per_epoch=2"}
                                        << "the dataset has no samples";
    QTest::newRow("accumulation past the data")
        << QStringList{"gradient_accumulation_steps=100000"} << "fewer than gradient_accumulation_steps (100000)";
  }
  void runsThatCannotLearnFail() {
    QFETCH(QStringList, overrides);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const Result r = run(QStringList{"run", "full_finetune_single_device", "--config", "tiny/full_single_device",
                                     "output_dir=" + dir.filePath("out"), "epochs=1"} +
                         overrides,
                         TB_SOURCE_DIR);
    expectOneLineError(r, expected);
    QVERIFY2(!QFileInfo::exists(dir.filePath("out/epoch_0")), "a run that learned nothing saved a checkpoint");
  }

  void runBadOverrideIsUserError() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    Result r = run(tinyRun(dir.filePath("out"), {"batch_size=0"}));
    expectOneLineError(r, "override 'batch_size=0': batch_size: must be at least 1, got 0");
    QVERIFY(!QFileInfo::exists(dir.filePath("out")));  // nothing ran
  }

  // SIGINT / SIGTERM ask the recipe to stop after the current step: a clean exit 0, never death by signal.
  void runStopsOnSignal_data() {
    QTest::addColumn<int>("signal");
    QTest::newRow("SIGINT") << int(SIGINT);
    QTest::newRow("SIGTERM") << int(SIGTERM);
  }
  void runStopsOnSignal() {
    QFETCH(int, signal);
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    QProcess p;
    QVERIFY(startLongRun(p, dir.filePath("out")));
    const QString log = dir.filePath("out/logs/metrics.jsonl");
    ::kill(static_cast<pid_t>(p.processId()), signal);
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    QList<QJsonObject> lines = jsonLines(log);
    QCOMPARE(lines.last().value("event").toString(), QString("end"));
    QCOMPARE(lines.last().value("status").toString(), QString("stopped"));
  }

  // A second run into the output_dir of a running one is refused before it writes anything (both
  // completed before, the second overwriting the first's checkpoints and interleaving its log).
  void secondRunIntoABusyOutputDirIsRefused() {
    QTemporaryDir dir;
    QProcess first;
    QVERIFY(startLongRun(first, dir.filePath("out")));
    const QString log = dir.filePath("out/logs/metrics.jsonl");
    const Result second = run(tinyRun(dir.filePath("out")));
    expectOneLineError(second, "output_dir " + dir.filePath("out") + " is in use by another run (pid " +
                                   QString::number(first.processId()) + ")");
    ::kill(static_cast<pid_t>(first.processId()), SIGINT);
    QVERIFY(first.waitForFinished(120000));
    QCOMPARE(first.exitCode(), 0);
    int ends = 0;
    for (const QJsonObject& o : jsonLines(log)) ends += o.value("event").toString() == "end";
    QCOMPARE(ends, 1);  // only the first run's
    // The lock goes with the process: the folder takes the next run, once told to replace the first
    // (which saved a checkpoint when it stopped: a fresh run into it alone would be refused).
    QCOMPARE(run(tinyRun(dir.filePath("out")) << "overwrite_output_dir=true").code, 0);
  }

  // A file size limit (as a full disk: writes fail) while the checkpoint is written: LibTorch's writer
  // aborted the process from a destructor (or SIGXFSZ killed it), leaving a .tmp_ folder and no end
  // event. Now the run fails with the reason, the temporary folder is gone and the log ends.
  void fileSizeLimitDuringASaveFailsCleanly() {
    QTemporaryDir dir;
    QStringList args = tinyRun(dir.filePath("out"));
    for (QString& a : args) a = "'" + a + "'";
    // 1600 blocks of 512 bytes: the model file (0.56 MB) fits, the optimizer state (1.1 MB) does not.
    const QString script = "ulimit -f 1600 && exec \"$1\" " + args.join(' ');
    QProcess p;
    p.start("/bin/sh", {"-c", script, "sh", cli_});
    QVERIFY(p.waitForFinished(120000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(err.contains("recipe_state.pt: write failed: File too large (a file size limit)"), qPrintable(err));
    QCOMPARE(QDir(dir.filePath("out")).entryList({".tmp_*", "epoch_*"}, QDir::Dirs | QDir::Hidden).size(), 0);
    const QList<QJsonObject> lines = jsonLines(dir.filePath("out/logs/metrics.jsonl"));
    QVERIFY(!lines.isEmpty());
    QCOMPARE(lines.last().value("event").toString(), QString("end"));
    QCOMPARE(lines.last().value("status").toString(), QString("failed"));
  }

  // Killed between the two renames that replace a checkpoint: only .old_<name>_<pid> is left. Resume
  // puts it back and continues from it (it ignored it before: "no complete checkpoint").
  void resumeRestoresACheckpointMovedAside() {
    QTemporaryDir dir;
    QCOMPARE(run(tinyRun(dir.filePath("out"), {"epochs=1"})).code, 0);
    QVERIFY(QDir(dir.filePath("out")).rename("epoch_0", ".old_epoch_0_999999999"));  // a pid no process has
    const Result r = run(tinyRun(dir.filePath("out"), {"epochs=2", "resume_from_checkpoint=true"}));
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("resum"), qPrintable(r.out));
    QVERIFY(QFileInfo::exists(dir.filePath("out/epoch_0/tunebench_checkpoint.json")));
    QVERIFY(QFileInfo::exists(dir.filePath("out/epoch_1/tunebench_checkpoint.json")));
  }

  // Resume trusted the folder: a recipe_state.json saying global_step 1e6 was accepted, another recipe's or
  // dtype's checkpoint failed deep in LibTorch. Each is now refused in one line naming the folder.
  void resumeRefusesAFolderOfAnotherRun() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    QCOMPARE(run(tinyRun(dir.filePath("out"), {"epochs=1"})).code, 0);
    const QString folder = dir.filePath("out/epoch_0");
    auto edit = [](const QString& path, const QString& from, const QString& to) {
      QFile f(path);
      if (!f.open(QIODevice::ReadOnly)) return false;
      QString text = QString::fromUtf8(f.readAll());
      f.close();
      const QRegularExpression re(from);
      if (!text.contains(re)) return false;
      text.replace(re, to);
      return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text.toUtf8()) > 0;
    };
    auto resume = [&](const QStringList& extra = {}) {
      return run(tinyRun(dir.filePath("out"), QStringList{"epochs=2", "resume_from_checkpoint=true"} + extra));
    };
    auto refusedWith = [](const Result& r, const QString& words) {
      return r.code != 0 && r.err.contains(words) && r.err.contains("cannot resume from") && !r.err.contains("Exception raised");
    };

    const Result bf16 = resume({"dtype=bf16"});
    QVERIFY2(refusedWith(bf16, "it was trained in fp32, this config says dtype bf16"), qPrintable(bf16.err));

    const QString state = folder + "/recipe_state.json";
    QVERIFY(QFile::copy(state, state + ".bak"));
    QVERIFY(edit(state, R"("global_step": \d+)", R"("global_step": 1e6)"));
    const Result step = resume();
    QVERIFY2(refusedWith(step, "global_step 1000000, its manifest step"), qPrintable(step.err));
    QVERIFY(QFile::remove(state) && QFile::rename(state + ".bak", state));

    const QString manifest = folder + "/tunebench_checkpoint.json";
    QVERIFY(edit(manifest, R"("recipe": "full_finetune_single_device")", R"("recipe": "lora_finetune_single_device")"));
    const Result recipe = resume();
    QVERIFY2(refusedWith(recipe, "it was written by lora_finetune_single_device, this run is full_finetune_single_device"),
             qPrintable(recipe.err));
    QVERIFY(edit(manifest, R"("recipe": "lora_finetune_single_device")", R"("recipe": "full_finetune_single_device")"));
    const Result ok = resume();
    QVERIFY2(ok.code == 0, qPrintable(ok.err));
  }

  // SIGKILL (no handler runs) while a checkpoint is being written: every checkpoint folder is complete
  // or absent, the newest complete one resumes, and the next save clears what the dead run left.
  void killDuringSaveLeavesALoadableCheckpoint() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    const QStringList data = {"dataset.num_samples=1000000", "save_every_n_steps=1"};
    QProcess p;
    p.start(cli_, tinyRun(out, data + QStringList{"max_steps_per_epoch=null"}));
    QVERIFY(p.waitForStarted());
    auto saving = [&] { return !QDir(out).entryList({".tmp_*"}, QDir::Dirs | QDir::Hidden).isEmpty(); };
    QElapsedTimer timer;
    timer.start();
    bool caught = false;
    while (timer.elapsed() < 60000 && p.state() == QProcess::Running) {
      // A later save under way, once an earlier one is complete: kill it right there.
      if (saving() && tb::training::newest_complete_checkpoint(out.toStdString())) {
        ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
        caught = true;
        break;
      }
      QThread::usleep(200);
    }
    if (!caught) p.kill();
    QVERIFY(p.waitForFinished(30000));
    QVERIFY2(caught, "never saw a save under way after a complete checkpoint");
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);

    for (const auto& c : tb::training::list_checkpoints(out.toStdString())) QVERIFY2(c.complete, c.path.c_str());
    const auto newest = tb::training::newest_complete_checkpoint(out.toStdString());
    QVERIFY(newest.has_value());
    const int64_t step = newest->step;
    QVERIFY(step >= 1);

    Result resumed = run(tinyRun(out, data + QStringList{"resume_from_checkpoint=true",
                                                         "max_steps_per_epoch=" + QString::number(step + 2)}));
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains("resumed from") && resumed.out.contains("at step " + QString::number(step)),
             qPrintable(resumed.out));
    int64_t last = 0;
    for (const QJsonObject& o : jsonLines(out + "/logs/metrics.jsonl"))
      if (o.contains("step") && !o.contains("event")) last = o.value("step").toInteger();
    QCOMPARE(last, step + 2);
    QVERIFY2(!saving(), "the killed run's temporary folder is still there");
  }

  void evalAndGenerateNameAMissingConfig_data() {
    QTest::addColumn<QStringList>("args");
    QTest::newRow("eval") << QStringList{"eval", "--config", "no_such_config.yaml"};
    QTest::newRow("generate") << QStringList{"generate", "--config", "no_such_config.yaml", "--prompt", "hi"};
  }
  void evalAndGenerateNameAMissingConfig() {
    QFETCH(QStringList, args);
    expectOneLineError(run(args), "no_such_config.yaml");
  }

  // bench step runs the real recipe and reports figures we can check by hand: llama_tiny_test
  // (vocab 512, dim 64, 2 layers, 4 heads on 2 kv heads of 16, hidden 128, untied head) has 139584
  // parameters, and full AdamW in fp32 keeps 4 bytes of weight, 4 of gradient and 8 of moments each.
  void benchStepReportsTheMemoryBudgetAndSpeed() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    Result r = run({"bench", "step", "--config", fixture("tiny_random_full.yaml"), "--steps", "3", "--warmup", "1",
                    "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    const QStringList lines = r.out.trimmed().split('\n');
    const QJsonObject f = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    QVERIFY2(!f.isEmpty(), qPrintable(r.out));
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const qint64 dim = 64, vocab = 512, kv = 2 * 16, hidden = 128;
    const qint64 per_layer = 2 * dim * dim + 2 * kv * dim + 3 * hidden * dim + 2 * dim;
    const qint64 params = 2 * vocab * dim + 2 * per_layer + dim;
    QCOMPARE(params, qint64(139584));
    QCOMPARE(f.value("recipe").toString(), QString("full_finetune_single_device"));
    QCOMPARE(qint64(f.value("trainable_params").toDouble()), params);
    QCOMPARE(qint64(f.value("frozen_params").toDouble()), qint64(0));
    QCOMPARE(qint64(std::llround(f.value("optimizer_states_gib").toDouble() * gib)), params * 8);
    QCOMPARE(qint64(std::llround(f.value("floor_gib").toDouble() * gib)), params * 16);
    QCOMPARE(f.value("tokens_per_step").toInt(), 2 * 15);  // batch 2 x (16 - 1) shifted labels
    QCOMPARE(f.value("steps").toInt(), 3);
    QCOMPARE(f.value("threads").toInt(), 1);  // the config's num_threads
    QVERIFY(f.value("tokens_per_s").toDouble() > 0);
    QVERIFY(f.value("median_step_s").toDouble() > 0);
    // Every measured step holds the weights, gradients and both moments at once.
    QVERIFY2(f.value("peak_memory_gib").toDouble() >= f.value("floor_gib").toDouble(), qPrintable(lines.last()));
  }

  // --profile: one more step (not in the figures) under LibTorch's profiler, its Chrome trace written;
  // a compiled step's trace names the fused kernels.
  void benchStepWritesAProfileOfOneMoreStep() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QTemporaryDir dir;
    const QString trace = dir.filePath("step.json");
    Result r = run({"bench", "step", "--config", fixture("tiny_random_full.yaml"), "--steps", "2", "--warmup", "1",
                    "--profile", trace, "compile=true", "dataset.num_samples=8",
                    "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));  // 4 steps of batch 2 in 8 samples: enough
    const QJsonObject f = QJsonDocument::fromJson(r.out.trimmed().split('\n').last().toUtf8()).object();
    QCOMPARE(f.value("steps").toInt(), 2);
    QCOMPARE(f.value("profile").toString(), trace);
    QFile file(trace);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll());
    const QJsonArray events = doc.isArray() ? doc.array() : doc.object().value("traceEvents").toArray();
    QSet<QString> names;
    for (const auto& e : events) names.insert(e.toObject().value("name").toString());
    QVERIFY2(names.contains("tb::fused_linear_cross_entropy"), qPrintable(QStringList(names.values()).join(", ")));
    QVERIFY(names.contains("tb::fused_causal_attention"));
    QVERIFY(names.contains("tb::FusedAdamW::step"));
    // The profiled step needs a batch too: 8 samples hold 4 steps of 2, not 4 measured + 1 profiled.
    Result short_run = run({"bench", "step", "--config", fixture("tiny_random_full.yaml"), "--steps", "4", "--warmup",
                            "0", "--profile", trace, "dataset.num_samples=8",
                            "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    expectOneLineError(short_run, "the run ended after 4 of 5 steps");
  }

  // Ctrl-C during a bench stops it after the current step: exit 1 with a one-line reason, no hang.
  void benchStepStopsOnSigint() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    QProcess p;
    p.start(cli_, {"bench", "step", "--config", fixture("tiny_random_full.yaml"), "--steps", "1000000", "--progress",
                   "dataset.num_samples=100000000",
                   "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    QVERIFY(p.waitForStarted());
    // Interrupt once it is stepping (its first step's progress line), not while it is still loading.
    p.setReadChannel(QProcess::StandardError);
    QString err;
    while (!err.contains("bench: step 1/") && p.state() == QProcess::Running && p.waitForReadyRead(60000))
      err += QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("bench: step 1/") && p.state() == QProcess::Running, qPrintable(err));
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    err += QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("bench: interrupted after"), qPrintable(err));
  }

  void benchStepNeedsEnoughData() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    Result r = run({"bench", "step", "--config", fixture("tiny_random_full.yaml"), "--steps", "5", "--warmup", "0",
                    "dataset.num_samples=4",
                    "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    expectOneLineError(r, "the run ended after 2 of 5 steps");
  }

  // bench compile: eager and compiled on the same batches, one comparison line.
  void benchCompileComparesEagerAndCompiled() {
    QVERIFY2(tb::find_recipe("full_finetune_single_device"), "full_finetune_single_device is not built in");
    Result r = run({"bench", "compile", "--config", fixture("tiny_random_full.yaml"), "--steps", "3", "--warmup", "1",
                    "tokenizer.path=" + QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    const QJsonObject f = QJsonDocument::fromJson(r.out.trimmed().split('\n').last().toUtf8()).object();
    for (const char* key : {"recipe", "eager_tokens_per_s", "compile_tokens_per_s", "speedup", "eager_first_step_s",
                            "compile_first_step_s", "compile_warmup_s", "loss_max_rel_diff", "eager_peak_memory_gib",
                            "compile_peak_memory_gib"})
      QVERIFY2(f.contains(key), key);
    QCOMPARE(f.value("recipe").toString(), QString("full_finetune_single_device"));
    QCOMPARE(f.value("compile_fallback").toBool(), false);
    QCOMPARE(f.value("compared_steps").toInt(), 4);
    QVERIFY2(f.value("loss_max_rel_diff").toDouble() < 1e-3, qPrintable(r.out));
    QVERIFY(f.value("compile_warmup_s").toDouble() > 0);
    const double ratio = f.value("compile_tokens_per_s").toDouble() / f.value("eager_tokens_per_s").toDouble();
    QVERIFY(std::abs(ratio - f.value("speedup").toDouble()) < 1e-9);
  }

  void closedStdoutIsNotASignal() {
    // `tunebench-cli ls | head -0`: writing to a closed pipe must not kill it with SIGPIPE.
    // The reader has exited before the writer starts, so the write hits a closed pipe; 141 would be SIGPIPE.
    QProcess p;
    p.start("/bin/sh", {"-c", "{ sleep 0.3; \"$0\" ls; echo status=$? >&2; } | true", cli_});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(QString::fromUtf8(p.readAllStandardError()).trimmed(), QString("status=0"));
  }
};

TB_TEST(TestCli)
#include "test_cli.moc"
