// torchtune's own single-device configs (tests/data/torchtune_configs, copied unchanged) through
// `validate` with the local paths a user sets (checkpoint folder, tokenizer files, a local data file):
// each passes, or fails only with the reasons docs/torchtune-compat.md gives for it, one line each.
#include <QtTest>

#include "test_main.h"

#include <filesystem>
#include <map>

#include <yaml-cpp/yaml.h>

#include "components/builtin.h"
#include "config/config.h"

namespace fs = std::filesystem;

namespace {

const std::string kDir = TB_SOURCE_DIR "/tests/data/torchtune_configs";

// What cannot work here, by config (relative path) -> the message parts its diagnostics may contain.
const std::map<std::string, std::vector<std::string>>& expected_refusals() {
  static const std::map<std::string, std::vector<std::string>> refusals = {
      {"llama3/8B_dora_single_device.yaml", {"DoRA is not supported"}},
      {"llama3/8B_qdora_single_device.yaml", {"DoRA is not supported"}},
      {"llama3_2_vision/11B_full_single_device.yaml", {"multimodal", "collate_fn", "LLAMA3_VISION"}},
      {"llama3_2_vision/11B_lora_single_device.yaml", {"multimodal", "collate_fn", "LLAMA3_VISION"}},
      {"llama3_2_vision/11B_qlora_single_device.yaml", {"multimodal", "collate_fn", "LLAMA3_VISION"}},
  };
  return refusals;
}

// The overrides a user writes to point a torchtune config at local files.
std::vector<std::string> local_paths(const YAML::Node& config) {
  std::vector<std::string> out = {"output_dir=/tmp/tunebench-torchtune-configs", "checkpointer.checkpoint_dir=/models/m"};
  const YAML::Node tokenizer = config["tokenizer"];
  for (const char* key : {"path", "merges_file", "vocab_path", "merges_path"})
    if (tokenizer[key]) out.push_back(std::string("tokenizer.") + key + "=/models/m/" + key);
  out.push_back("dataset.source=json");
  out.push_back("dataset.data_files=/data/alpaca_cleaned.json");
  return out;
}

std::vector<std::string> config_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kDir))
    if (e.path().extension() == ".yaml") out.push_back(fs::relative(e.path(), kDir).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

class TestTorchtuneConfigs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void theCopiesAreAllThere() { QCOMPARE(config_files().size(), size_t(64)); }

  void validateAsTheCompatTableSays_data() {
    QTest::addColumn<QString>("file");
    for (const auto& f : config_files()) QTest::newRow(f.c_str()) << QString::fromStdString(f);
  }
  void validateAsTheCompatTableSays() {
    QFETCH(QString, file);
    const std::string rel = file.toStdString(), path = kDir + "/" + rel;
    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = tb::config::recipe_for_config(path);
    QVERIFY2(!options.recipe.empty(), "no recipe from the file name");
    options.overrides = local_paths(YAML::LoadFile(path));
    const auto result = tb::config::load_file(path, options);
    const auto refusal = expected_refusals().find(rel);
    if (refusal == expected_refusals().end()) {
      QVERIFY2(result.ok(), tb::config::format_diagnostics(result.diagnostics).c_str());
      return;
    }
    QVERIFY2(!result.ok(), "validates, but the compat table says it cannot work here");
    for (const auto& d : result.diagnostics) {
      const std::string line = d.format();
      QVERIFY2(line.find('\n') == std::string::npos, line.c_str());
      const bool expected = std::any_of(refusal->second.begin(), refusal->second.end(),
                                        [&](const std::string& part) { return line.find(part) != std::string::npos; });
      QVERIFY2(expected, ("not a reason the compat table gives: " + line).c_str());
    }
  }

  // The Hub dataset a config names (source: yahma/alpaca-cleaned) validates: it is fetched into the cache and
  // read when the dataset is built. Offline and not in the cache, the build says which download to run.
  void hubDatasetsValidateAndNameTheirDownloadOffline() {
    const std::string path = kDir + "/llama3_2/1B_lora_single_device.yaml";
    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = tb::config::recipe_for_config(path);
    const auto result = tb::config::load_file(path, options);
    QVERIFY2(result.ok(), tb::config::format_diagnostics(result.diagnostics).c_str());
    QVERIFY(result.config->at("dataset.source").IsDefined() || result.config->at("dataset._component_").IsDefined());
  }
};

TB_TEST(TestTorchtuneConfigs)
#include "test_torchtune_configs.moc"
