// How the programs find their files and where they write, installed or in the build tree (torch-free):
// a bundled config is known by where it lies, inputs fall back on the share folder, and an installed
// CLI's run of a bundled config goes to the user's data folder instead of the working folder.
#include <QtTest>

#include "test_main.h"
#include "scoped_env.h"
#include "test_support.h"

#include <QTemporaryDir>

#include <filesystem>

#include "config/config.h"
#include "config/user_dirs.h"

namespace fs = std::filesystem;
using namespace tb;

namespace {
// A prefix as an installed package lays it out: <root>/usr/share/tunebench with the bundled default
// (output_dir: build/runs/tiny_full) and a resource; `build_tree` adds the CMakeCache.txt a build folder has beside its share/.
fs::path make_prefix(const fs::path& root, bool build_tree) {
  const fs::path share = root / "usr" / "share" / "tunebench";
  fs::create_directories(share / "configs" / "tiny");
  fs::copy_file(fs::path(TB_SOURCE_DIR) / "configs" / "tiny" / "full_single_device.yaml",
                share / "configs" / "tiny" / "full_single_device.yaml");
  tbtest::write_file((share / "resources" / "base_model" / "config.json").string(), "{}");
  if (build_tree) tbtest::write_file((root / "usr" / "CMakeCache.txt").string(), "");
  return share;
}
}  // namespace

class TestInstalledLayout : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path root() const { return fs::path(tmp_.path().toStdString()); }

 private Q_SLOTS:
  void aBundledConfigIsKnownByWhereItLies() {
    const fs::path share = make_prefix(root() / "a", false);
    ScopedEnv env("TUNEBENCH_SHARE_DIR", share.string());
    const fs::path file = share / "configs" / "tiny" / "full_single_device.yaml";
    QCOMPARE(config::bundled_config_name(file.string()), std::string("tiny/full_single_device"));
    // The same file reached another way is still the bundled one.
    QCOMPARE(config::bundled_config_name((share / "configs" / "tiny" / ".." / "tiny" / "full_single_device.yaml").string()),
             std::string("tiny/full_single_device"));
    tbtest::write_file((root() / "mine.yaml").string(), "seed: 1\n");
    QVERIFY(config::bundled_config_name((root() / "mine.yaml").string()).empty());
    QVERIFY(config::bundled_config_name((share / "configs" / ".." / "resources" / "base_model" / "config.json").string()).empty());
    QVERIFY(config::bundled_config_name((share / "configs" / "tiny" / "nope.yaml").string()).empty());
  }

  void theShareFolderOfABuildTreeIsToldApart() {
    {
      ScopedEnv env("TUNEBENCH_SHARE_DIR", make_prefix(root() / "installed", false).string());
      QVERIFY(!config::share_is_build_tree());
    }
    {
      ScopedEnv env("TUNEBENCH_SHARE_DIR", make_prefix(root() / "built", true).string());
      QVERIFY(config::share_is_build_tree());
    }
    // These tests run from the build tree: its share folder is a build tree's.
    qunsetenv("TUNEBENCH_SHARE_DIR");
    QVERIFY(config::share_is_build_tree());
  }

  void inputsFallBackOnTheShareFolder() {
    const fs::path share = make_prefix(root() / "inputs", false);
    ScopedEnv env("TUNEBENCH_SHARE_DIR", share.string());
    const fs::path cwd = root() / "cwd";
    fs::create_directories(cwd);
    const fs::path before = fs::current_path();
    fs::current_path(cwd);
    const std::string from_share = config::resolve_input_path("resources/base_model");
    tbtest::write_file((cwd / "resources" / "base_model" / "config.json").string(), "{}");
    const std::string from_cwd = config::resolve_input_path("resources/base_model");
    const std::string missing = config::resolve_input_path("resources/nothing");
    fs::current_path(before);
    QCOMPARE(from_share, (share / "resources" / "base_model").string());
    QCOMPARE(from_cwd, std::string("resources/base_model"));  // the working folder's wins
    QCOMPARE(missing, std::string("resources/nothing"));       // as written: its error names it so
    QCOMPARE(config::resolve_input_path("/abs/path"), std::string("/abs/path"));
  }

  void anInstalledCliRunsABundledConfigIntoTheUserDataFolder() {
    ScopedEnv data("XDG_DATA_HOME", (root() / "home" / "data").string());
    const std::string runs = (root() / "home" / "data" / "tunebench" / "runs" / "tiny_full").string();
    // The output_dir a load ends with, and that ${output_dir} follows it (the checkpointer's).
    auto output_dir = [](const std::string& name_or_path, const std::vector<std::string>& overrides = {}) {
      config::LoadOptions options;
      options.overrides = overrides;
      const config::LoadResult r = config::load_file(name_or_path, options);
      if (!r.ok()) return std::string("load failed: ") + config::format_diagnostics(r.diagnostics);
      const std::string out = r.config->get_string("output_dir", "");
      if (r.config->get_string("checkpointer.output_dir", "") != out) return std::string("${output_dir} did not follow");
      return out;
    };
    const std::string as_written = "build/runs/tiny_full";
    {
      ScopedEnv env("TUNEBENCH_SHARE_DIR", make_prefix(root() / "inst", false).string());
      QCOMPARE(QString::fromStdString(output_dir("tiny/full_single_device")), QString::fromStdString(runs));
      // Named by its path, it is the same bundled config.
      QCOMPARE(output_dir((root() / "inst/usr/share/tunebench/configs/tiny/full_single_device.yaml").string()), runs);
      // An output_dir the user gives stays theirs, relative to the working folder or absolute.
      QCOMPARE(output_dir("tiny/full_single_device", {"output_dir=my_runs"}), std::string("my_runs"));
      QCOMPARE(output_dir("tiny/full_single_device", {"output_dir=/srv/runs"}), std::string("/srv/runs"));
      // The user's own config: relative to the working folder, as torchtune's.
      fs::copy_file(root() / "inst/usr/share/tunebench/configs/tiny/full_single_device.yaml", root() / "mine.yaml",
                    fs::copy_options::overwrite_existing);
      QCOMPARE(output_dir((root() / "mine.yaml").string()), as_written);
    }
    {
      // In the build tree the README's build/runs/tiny_full stays where it was.
      ScopedEnv env("TUNEBENCH_SHARE_DIR", make_prefix(root() / "tree", true).string());
      QCOMPARE(output_dir("tiny/full_single_device"), as_written);
    }
  }
};

TB_TEST(TestInstalledLayout)
#include "test_installed_layout.moc"
