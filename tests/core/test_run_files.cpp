// The engine's answers the window and the CLI share about a run's files (torch-free): which files of a
// checkpoint folder hold the weights (its manifest's list wins over the config's names), whether a run's
// process is still alive (its folder's lock), where the window's runs go, how worker processes share
// the cores, and one wording for a JSON file that cannot be read.
#include <QtTest>

#include "test_main.h"
#include "scoped_env.h"

#include <QTemporaryDir>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.h"
#include "config/schema.h"
#include "config/user_dirs.h"
#include "text/json_file.h"
#include "training/output_lock.h"
#include "training/run_log.h"

namespace fs = std::filesystem;
using namespace tb;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

class TestRunFiles : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path dir(const char* name) const { return fs::path(tmp_.path().toStdString()) / name; }

 private Q_SLOTS:
  void aCheckpointsManifestSaysWhichFilesLoad() {
    const fs::path ckpt = dir("epoch_0");
    write(ckpt / "model-00001-of-00001.safetensors", "x");
    write(ckpt / "config.json", "{}");
    write(ckpt / checkpoint::kIndexFileName, R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}})");
    const auto described = checkpoint::describe_checkpoint_files(ckpt.string());
    QCOMPARE(described["model_files"], nlohmann::json({"model-00001-of-00001.safetensors"}));
    QCOMPARE(described["files"]["config.json"].get<int>(), 2);
    QVERIFY(!described["files"].contains(checkpoint::kManifestName));
    // With the manifest, the config's names of the source folder's files do not matter.
    nlohmann::json manifest = {{"step", 1}};
    manifest.update(described);
    write(ckpt / checkpoint::kManifestName, manifest.dump());
    QCOMPARE(checkpoint::resolve_checkpoint_files(ckpt.string(), {"model.safetensors"}),
             std::vector<std::string>{"model-00001-of-00001.safetensors"});
    QVERIFY(!checkpoint::resolve_checkpoint_files(ckpt.string(), {}).empty());
    // Without a manifest, the names given are the names read: a missing one is said with its path.
    const fs::path hub = dir("hub");
    write(hub / "model.safetensors", "x");
    QCOMPARE(checkpoint::resolve_checkpoint_files(hub.string(), {}), std::vector<std::string>{"model.safetensors"});
    try {
      checkpoint::resolve_checkpoint_files(hub.string(), {"model-00001-of-00002.safetensors"});
      QFAIL("a missing file was accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find((hub / "model-00001-of-00002.safetensors").string()) != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, checkpoint::resolve_checkpoint_files(hub.string(), {"pytorch_model.bin"}));
  }

  // An index or manifest naming a file outside the folder is refused, not opened.
  void filesOutsideTheFolderAreRefused() {
    const fs::path bad = dir("escaping");
    write(bad / checkpoint::kIndexFileName, R"({"weight_map": {"a": "../../../../etc/passwd"}})");
    try {
      checkpoint::resolve_checkpoint_files(bad.string(), {});
      QFAIL("a file outside the folder was taken");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("is outside") != std::string::npos, e.what());
    }
    write(bad / checkpoint::kManifestName, R"({"step": 1, "model_files": ["/etc/passwd"]})");
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, checkpoint::resolve_checkpoint_files(bad.string(), {}));
  }

  void anOlderManifestAndAnAdapterOnlyCheckpoint() {
    // A manifest from before it listed files: the folder's own index says.
    const fs::path old = dir("old/step_2");
    write(old / "model-00001-of-00002.safetensors", "x");
    write(old / "model-00002-of-00002.safetensors", "y");
    write(old / checkpoint::kIndexFileName,
          R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    write(old / checkpoint::kManifestName, R"({"step": 2})");
    QCOMPARE(checkpoint::resolve_checkpoint_files(old.string(), {"model.safetensors"}),
             (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
    // An adapter alone holds no model: said, with what to do.
    const fs::path adapter = dir("adapter/epoch_0");
    write(adapter / checkpoint::kAdapterFileName, "x");
    write(adapter / checkpoint::kManifestName, R"({"step": 2, "model_files": []})");
    try {
      checkpoint::resolve_checkpoint_files(adapter.string(), {});
      QFAIL("an adapter-only checkpoint was taken for weights");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("adapter_checkpoint") != std::string::npos, e.what());
    }
  }

  void aRunsLockTellsWhetherItsProcessLives() {
    const fs::path out = dir("run");
    QVERIFY(!training::output_dir_in_use(out.string()));  // no folder, no lock file
    {
      training::OutputDirLock lock(out.string());
      QVERIFY(training::output_dir_in_use(out.string()));
      QVERIFY(fs::exists(out / ".tunebench.lock"));
    }
    QVERIFY(!training::output_dir_in_use(out.string()));  // the lock file stays; nobody holds it
  }

  void theWindowsRunsGoToTheUserDataFolder() {
    ScopedEnv data("XDG_DATA_HOME", "/data/home");
    QCOMPARE(config::user_runs_dir(), std::string("/data/home/tunebench/runs"));
    QCOMPARE(config::window_runs_folder("build/runs/tiny_full"), std::string("/data/home/tunebench/runs/tiny_full"));
    QCOMPARE(config::window_runs_folder("runs/"), std::string("/data/home/tunebench/runs/runs"));
    QCOMPARE(config::window_runs_folder("."), std::string("/data/home/tunebench/runs"));
    QCOMPARE(config::window_runs_folder("/srv/runs/a/"), std::string("/srv/runs/a"));
    ScopedEnv relative("XDG_DATA_HOME", "not/absolute");  // ignored, as the XDG specification says
    ScopedEnv home("HOME", "/home/u");
    QCOMPARE(config::user_data_dir(), std::string("/home/u/.local/share/tunebench"));
  }

  void workerProcessesShareTheCores() {
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto fits = config::worker_threads(1, 1);
    QCOMPARE(fits.threads, int64_t(1));
    QVERIFY(fits.note.empty());
    const auto over = config::worker_threads(cores, 2);
    QCOMPARE(over.threads, int64_t(std::max(1, cores / 2)));
    QVERIFY2(over.note.find("2 processes on " + std::to_string(cores) + " cores") != std::string::npos, over.note.c_str());
    QCOMPARE(config::worker_threads(4, 4 * cores).threads, int64_t(1));  // never 0
  }

  // The compile tile's noise: the interquartile range over the median, quartiles as numpy interpolates them.
  void aRunsSpeedNoiseIsItsRelativeSpread() {
    QCOMPARE(training::relative_spread({5, 1, 4, 2, 3}), 2.0 / 3.0);  // q25 2, median 3, q75 4
    QCOMPARE(training::relative_spread({10, 10, 10, 10}), 0.0);
    QCOMPARE(training::relative_spread({1, 2, 3}), 0.0);  // too few to say
    std::vector<training::StepMetrics> steps(3);
    steps[0].phase = training::Phase::Warmup, steps[0].tokens_per_second = 1;
    steps[1].tokens_per_second = 100, steps[2].tokens_per_second = 120;
    QCOMPARE(training::steady_tokens_per_second(steps), (std::vector<double>{100, 120}));
  }

  void aJsonFileThatCannotBeReadIsSaidOneWay() {
    const fs::path bad = dir("bad.json");
    write(bad, "{\"a\": ");
    try {
      text::read_json_file(bad.string());
      QFAIL("bad JSON was read");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).rfind(bad.string() + ": not valid JSON: ", 0) == 0, e.what());
    }
    try {
      text::read_json_file(dir("absent.json").string());
      QFAIL("an absent file was read");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("absent.json: cannot open: ") != std::string::npos, e.what());
    }
    QVERIFY(!text::try_read_json_file(bad.string()));
  }
};

TB_TEST(TestRunFiles)
#include "test_run_files.moc"
