// Every config under configs/ validates: its keys and types always, its components once the model,
// data and training components they name are registered (the failure says which config and why).
#include <QtTest>

#include "test_main.h"

#include <filesystem>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "config/schema.h"

using namespace tb::config;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> source_configs() {
  std::vector<fs::path> out;
  fs::path root = fs::path(TB_SOURCE_DIR) / "configs";
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string name_of(const fs::path& p) {
  return fs::relative(p, fs::path(TB_SOURCE_DIR) / "configs").replace_extension().generic_string();
}

void add_config_rows() {
  QTest::addColumn<QString>("path");
  for (const fs::path& p : source_configs()) QTest::newRow(name_of(p).c_str()) << QString::fromStdString(p.string());
}

// What a config validates against: its recipe, or the eval/generate verbs for a recipe-less one.
std::string validated_as(const QString& path) {
  const std::string recipe = recipe_for_config(path.toStdString());
  return recipe.empty() ? kInferenceVerbs : recipe;
}

QString report(const LoadResult& r) { return QString::fromStdString(format_diagnostics(r.diagnostics)); }

}  // namespace

class TestConfigBundled : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void theRealModelConfigsExist() {
    for (const char* family : {"llama2/7B", "llama3_2/1B", "llama3_1/8B", "mistral/7B"})
      for (const char* recipe : {"full", "lora", "qlora"}) {
        fs::path p = fs::path(TB_SOURCE_DIR) / "configs" / (std::string(family) + "_" + recipe + "_single_device.yaml");
        QVERIFY2(fs::is_regular_file(p), p.string().c_str());
        LoadOptions o;
        o.recipe = recipe_for_config(p.string());
        o.registry = &tb::components::builtin();
        LoadResult r = load_file(p.string(), o);
        QVERIFY2(r.ok(), qPrintable(report(r)));
        // Checkpoints go under the run's own output_dir, logs beside them; compile is off as in torchtune.
        QCOMPARE(r.config->get_string("checkpointer.output_dir", "?"), r.config->get_string("output_dir", "!"));
        QCOMPARE(r.config->get_string("metric_logger.log_dir", "?"), r.config->get_string("output_dir", "!") + "/logs");
        QCOMPARE(r.config->get_bool("compile", true), false);
        bool lora = std::string(recipe) != "full";
        QCOMPARE(o.recipe, std::string(lora ? "lora_finetune_single_device" : "full_finetune_single_device"));
        std::string model = r.config->get_string("model._component_", "");
        bool named_for_recipe = std::string(recipe) == "full" ? model.find("lora_") == std::string::npos
                                                              : model.find(std::string(".") + recipe + "_") != std::string::npos;
        QVERIFY2(named_for_recipe, model.c_str());
      }
  }

  void everyConfigNamesItsRecipe_data() { add_config_rows(); }
  void everyConfigNamesItsRecipe() {
    QFETCH(QString, path);
    std::string recipe = recipe_for_config(path.toStdString());
    // Configs for the recipe-less verbs (`eval`, `generate`) say so in their name: validated as such.
    std::string stem = fs::path(path.toStdString()).stem().string();
    bool for_a_verb = stem.rfind("eval", 0) == 0 || stem.rfind("generate", 0) == 0;
    if (for_a_verb) {
      QCOMPARE(recipe, std::string(tb::config::kInferenceVerbs));
      LoadOptions o;
      o.recipe = recipe;
      o.registry = &tb::components::builtin();
      const auto r = load_file(path.toStdString(), o);
      QVERIFY2(r.ok(), format_diagnostics(r.diagnostics).c_str());  // no optimizer, loss or epochs asked for
      return;
    }
    QVERIFY2(recipe == "full_finetune_single_device" || recipe == "lora_finetune_single_device", qPrintable(path));
  }

  void keysAndTypes_data() { add_config_rows(); }
  void keysAndTypes() {
    QFETCH(QString, path);
    LoadOptions o;
    o.recipe = validated_as(path);
    LoadResult r = load_file(path.toStdString(), o);
    QVERIFY2(r.ok(), qPrintable(report(r)));
  }

  void componentsAgainstBuiltinRegistry_data() { add_config_rows(); }
  void componentsAgainstBuiltinRegistry() {
    QFETCH(QString, path);
    LoadOptions o;
    o.recipe = validated_as(path);
    o.registry = &tb::components::builtin();
    LoadResult r = load_file(path.toStdString(), o);
    QVERIFY2(r.ok(), qPrintable(path + " does not validate against the built-in components:\n" + report(r)));
  }

  // The build copies configs/ next to the binaries; bundled_configs() lists exactly those files.
  void bundledListMatchesSource() {
    qunsetenv("TUNEBENCH_SHARE_DIR");
    std::vector<std::string> listed;
    for (const BundledConfig& b : bundled_configs()) {
      listed.push_back(b.name);
      QCOMPARE(b.recipe, recipe_for_config(b.path));
    }
    for (const fs::path& p : source_configs()) {
      QVERIFY2(std::find(listed.begin(), listed.end(), name_of(p)) != listed.end(), name_of(p).c_str());
      QVERIFY(!find_config(name_of(p)).empty());
    }
  }
};

TB_TEST(TestConfigBundled)
#include "test_config_bundled.moc"
