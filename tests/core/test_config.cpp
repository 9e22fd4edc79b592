// Config parsing, scalar typing, interpolation, the registry and Args, bundled-config lookup.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <fstream>
#include <thread>

#include "config/config.h"
#include "components/builtin.h"
#include "config/registry.h"
#include "config/scalar.h"

using namespace tb::config;

namespace {

QString fixture(const char* name) { return QString(TB_SOURCE_DIR) + "/tests/data/config/" + name; }

ComponentSpec spec(const char* kind, const char* name, std::vector<std::string> aliases, std::vector<ArgSpec> args) {
  ComponentSpec s;
  s.kind = kind;
  s.name = name;
  s.aliases = std::move(aliases);
  s.args = std::move(args);
  return s;
}

// A registry of stand-in components, so these tests do not depend on the model and data code.
const Registry& test_registry() {
  static const Registry r = [] {
    Registry reg;
    auto none = [](const Args&) { return 0; };
    reg.add<int>(spec("model", "test.models.tiny", {"tiny"},
                      {arg("dim", ArgType::Int).must_be_set(), arg("n_layers", ArgType::Int).or_default("2"),
                       arg("lora_attn_modules", ArgType::StringList).or_default("[q_proj, v_proj]"),
                       arg("lora_rank", ArgType::Int).or_default("8"),
                       arg("dropout", ArgType::Float).or_null().or_default("null")}),
                 none);
    reg.add<int>(spec("tokenizer", "test.tokenizer", {}, {arg("path", ArgType::Path).must_be_set(), arg("max_seq_len", ArgType::Int).or_null().or_default("null")}),
                 none);
    ArgSpec model_type = arg("model_type", ArgType::String).or_default("LLAMA2");
    model_type.choices = {"LLAMA2", "LLAMA3", "MISTRAL"};
    reg.add<int>(spec("checkpointer", "test.checkpointer", {},
                      {arg("checkpoint_dir", ArgType::Path).must_be_set().or_null(), arg("checkpoint_files", ArgType::StringList).or_default("[]"),
                       arg("output_dir", ArgType::Path).must_be_set(), model_type}),
                 none);
    reg.add<int>(spec("dataset", "test.datasets.alpaca", {"alpaca"},
                      {arg("source", ArgType::String).or_default("tatsu-lab/alpaca"), arg("packed", ArgType::Bool).or_default("false")}),
                 none);
    reg.add<int>(spec("dataset", "test.datasets.synthetic", {}, {arg("seq_len", ArgType::Int).must_be_set(), arg("num_samples", ArgType::Int).or_default("64")}),
                 none);
    reg.add<int>(spec("optimizer", "test.optim.AdamW", {"AdamW"},
                      {arg("lr", ArgType::Float).or_default("0.001"), arg("weight_decay", ArgType::Float).or_default("0.01"),
                       arg("betas", ArgType::Any).or_default("[0.9, 0.999]")}),
                 none);
    reg.add<int>(spec("lr_scheduler", "test.sched.cosine", {}, {arg("num_warmup_steps", ArgType::Int).must_be_set()}), none);
    reg.add<int>(spec("loss", "test.loss.CE", {"CE"}, {}), none);
    tb::components::register_metric_loggers(reg);
    return reg;
  }();
  return r;
}

LoadResult load(const QString& path, std::vector<std::string> overrides = {}, const std::string& recipe = "") {
  LoadOptions o;
  o.overrides = std::move(overrides);
  o.recipe = recipe.empty() ? recipe_for_config(path.toStdString()) : recipe;
  o.registry = &test_registry();
  return load_file(path.toStdString(), o);
}

QString joined(const std::vector<Diagnostic>& d) { return QString::fromStdString(format_diagnostics(d)); }

}  // namespace

class TestConfig : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void loadsValidConfig() {
    LoadResult r = load(fixture("base.yaml"));
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    const Config& c = *r.config;
    QCOMPARE(c.recipe, std::string("lora_finetune_single_device"));
    QCOMPARE(c.get_int("model.dim", 0), int64_t(64));
    QCOMPARE(c.get_float("optimizer.lr", 0), 2e-5);
    QCOMPARE(c.get_bool("shuffle", false), true);
    QCOMPARE(c.get_string("dataset._component_", ""), std::string("alpaca"));
    QCOMPARE(c.at("model.lora_attn_modules").size(), size_t(2));
    QCOMPARE(c.at("model.lora_attn_modules.1").Scalar(), std::string("v_proj"));
    QCOMPARE(c.at("model.lora_attn_modules[0]").Scalar(), std::string("q_proj"));
    QVERIFY(c.at("tokenizer.max_seq_len").IsNull());
    QVERIFY(!c.at("no.such.key").IsDefined());
    QVERIFY(!c.at("model.dim.deeper").IsDefined());
  }

  void fillsDefaults() {
    LoadResult r = load(fixture("base.yaml"));
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    const Config& c = *r.config;
    // Not in the file: the schema's defaults are in effect and visible.
    QCOMPARE(c.get_int("gradient_accumulation_steps", -1), int64_t(1));
    QCOMPARE(c.get_string("dtype", ""), std::string("fp32"));
    QCOMPARE(c.get_bool("resume_from_checkpoint", true), false);
    QCOMPARE(c.get_int("num_threads", -1), int64_t(std::max(1u, std::thread::hardware_concurrency())));
    QVERIFY(c.at("max_steps_per_epoch").IsNull());
    // Component arguments keep their defaults in the registry, not in the config.
    QVERIFY(!c.at("model.n_layers").IsDefined());
  }

  void interpolation() {
    LoadResult r = load(fixture("interpolation.yaml"));
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    const Config& c = *r.config;
    QCOMPARE(c.get_int("model.dim", 0), int64_t(64));            // full value keeps the int type
    QCOMPARE(classify(c.at("model.dim")), ScalarKind::Int);
    QCOMPARE(c.at("model.lora_attn_modules").size(), size_t(2));  // a list copied whole
    QCOMPARE(c.get_int("model.lora_rank", 0), int64_t(64));       // relative, through another reference
    QCOMPARE(c.get_int("tokenizer.max_seq_len", 0), int64_t(64)); // a chain of three
    QCOMPARE(c.get_string("tokenizer.path", ""), std::string("runs/interp/weights/tokenizer.model"));
    QCOMPARE(c.get_string("checkpointer.output_dir", ""), std::string("runs/interp"));
    QCOMPARE(c.get_string("checkpointer.model_type", ""), std::string("LLAMA2"));
    // Inside a string, values read as Python's str() would write them; \${ stays literal.
    QCOMPARE(c.get_string("dataset.source", ""),
             std::string("lr=0.0001 flag=True none=None item=b.safetensors ${literal}"));
  }

  void interpolationFollowsOverride() {
    LoadResult r = load(fixture("base.yaml"), {"output_dir=runs/other"});
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    QCOMPARE(r.config->get_string("checkpointer.output_dir", ""), std::string("runs/other"));
    QCOMPARE(r.config->get_string("metric_logger.log_dir", ""), std::string("runs/other/logs"));
  }

  void nestedReferenceKey() {
    // OmegaConf expands a reference inside a reference's key first: ${${tokenizer.path}} -> ${output_dir}.
    LoadResult r = load(fixture("base.yaml"), {"tokenizer.path=output_dir", "dataset.source=${${tokenizer.path}}/data"});
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    QCOMPARE(r.config->get_string("dataset.source", ""), std::string("runs/base/data"));
  }

  void environmentResolver() {
    qputenv("TB_TEST_CONFIG_VAR", "from-env");
    LoadResult r = load(fixture("base.yaml"), {"dataset.source=${oc.env:TB_TEST_CONFIG_VAR}",
                                               "tokenizer.path=${oc.env:TB_TEST_UNSET_VAR,fallback.model}"});
    qunsetenv("TB_TEST_CONFIG_VAR");
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    QCOMPARE(r.config->get_string("dataset.source", ""), std::string("from-env"));
    QCOMPARE(r.config->get_string("tokenizer.path", ""), std::string("fallback.model"));
  }

  void scalarKinds_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("kind");
    auto row = [](const char* t, ScalarKind k) { QTest::newRow(t) << QString(t) << int(k); };
    row("1e-4", ScalarKind::Float);  // OmegaConf reads it as a float; YAML 1.1 alone would not
    row("2E+5", ScalarKind::Float);
    row(".5", ScalarKind::Float);
    row("1.", ScalarKind::Float);
    row("-.inf", ScalarKind::Float);
    row(".nan", ScalarKind::Float);
    row("42", ScalarKind::Int);
    row("-7", ScalarKind::Int);
    row("1_000", ScalarKind::Int);
    row("0x1F", ScalarKind::Int);
    row("True", ScalarKind::Bool);
    row("false", ScalarKind::Bool);
    row("yes", ScalarKind::Bool);
    row("OFF", ScalarKind::Bool);
    row("null", ScalarKind::Null);
    row("~", ScalarKind::Null);
    row("None", ScalarKind::String);  // a string in YAML; only the command line maps None to null
    row("v1.0", ScalarKind::String);
    row("1.2.3", ScalarKind::String);
    row("e5", ScalarKind::String);
    row("LLAMA2", ScalarKind::String);
  }
  void scalarKinds() {
    QFETCH(QString, text);
    QFETCH(int, kind);
    QCOMPARE(int(classify_plain(text.toStdString())), kind);
  }

  void quotedIsString() {
    // Quoted, block and !!str scalars are strings whatever they look like.
    YAML::Node y = YAML::Load("a: \"5\"\nb: 'true'\nc: !!str 1e-4\nd: |\n  7\ne: 5\n");
    QCOMPARE(classify(y["a"]), ScalarKind::String);
    QCOMPARE(classify(y["b"]), ScalarKind::String);
    QCOMPARE(classify(y["c"]), ScalarKind::String);
    QCOMPARE(classify(y["d"]), ScalarKind::String);
    QCOMPARE(classify(y["e"]), ScalarKind::Int);
  }

  // Python's str() of floats, as OmegaConf inserts them into strings (values from CPython's repr).
  void pythonStr_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("expected");
    auto row = [](const char* t, ScalarKind k, const char* e) { QTest::newRow(t) << QString(t) << int(k) << QString(e); };
    row("1e-4", ScalarKind::Float, "0.0001");
    row("1e-5", ScalarKind::Float, "1e-05");
    row("2e-5", ScalarKind::Float, "2e-05");
    row("3.0", ScalarKind::Float, "3.0");
    row("100.", ScalarKind::Float, "100.0");
    row("0.1", ScalarKind::Float, "0.1");
    row("1e16", ScalarKind::Float, "1e+16");
    row("1.5e15", ScalarKind::Float, "1500000000000000.0");
    row("-2.5e-7", ScalarKind::Float, "-2.5e-07");
    row("1_000", ScalarKind::Int, "1000");
    row("0x10", ScalarKind::Int, "16");
    row("yes", ScalarKind::Bool, "True");
    row("off", ScalarKind::Bool, "False");
    row("", ScalarKind::Null, "None");
  }
  void pythonStr() {
    QFETCH(QString, text);
    QFETCH(int, kind);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(python_str(text.toStdString(), ScalarKind(kind))), expected);
  }

  void toYamlRoundTrip() {
    LoadResult r = load(fixture("base.yaml"), {"dataset.source='true'", "tokenizer.path=\"5\""});
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    std::string text = r.config->to_yaml();
    LoadOptions o;
    o.recipe = kLora;
    o.registry = &test_registry();
    LoadResult again = load_text(text, "roundtrip.yaml", o);
    QVERIFY2(again.ok(), qPrintable(joined(again.diagnostics) + QString::fromStdString(text)));
    const Config& c = *again.config;
    QCOMPARE(classify(c.at("dataset.source")), ScalarKind::String);  // stays a string, not a boolean
    QCOMPARE(classify(c.at("tokenizer.path")), ScalarKind::String);
    QCOMPARE(c.get_float("optimizer.lr", 0), 2e-5);
    QCOMPARE(c.get_string("metric_logger.log_dir", ""), std::string("runs/base/logs"));
    QVERIFY(c.at("checkpointer.checkpoint_dir").IsNull());
  }

  void whereGivesSourcePosition() {
    LoadResult r = load(fixture("base.yaml"), {"optimizer.weight_decay=0.1"});
    QVERIFY2(r.ok(), qPrintable(joined(r.diagnostics)));
    Diagnostic d = r.config->where("optimizer.lr", "bad");
    QCOMPARE(d.line, 26);  // "  lr: 2e-5" is line 26, its value at column 7
    QCOMPARE(d.column, 7);
    QCOMPARE(r.config->where("checkpointer.checkpoint_dir", "x").format(),
             fixture("base.yaml").toStdString() + ":13:19: x");
    QCOMPARE(r.config->where("optimizer.weight_decay", "y").format(), std::string("override 'optimizer.weight_decay=0.1': y"));
  }

  void recipeSpecificKey() {
    QVERIFY(load(fixture("base.yaml"), {}, kLora).ok());
    LoadResult r = load(fixture("base.yaml"), {}, kFull);
    QCOMPARE(r.diagnostics.size(), size_t(1));
    QCOMPARE(r.diagnostics[0].line, 37);
    QCOMPARE(r.diagnostics[0].column, 1);
  }

  void registryLookup() {
    const Registry& r = test_registry();
    QVERIFY(r.find("AdamW") == r.find("test.optim.AdamW"));
    QVERIFY(r.find("AdamW") != nullptr);
    QVERIFY(r.find("adamw") == nullptr);
    QCOMPARE(r.of_kind("dataset").size(), size_t(2));
    QCOMPARE(r.of_kind("optimizer").front()->name, std::string("test.optim.AdamW"));
  }

  void registryRejectsDuplicateNames() {
    Registry r;
    r.add<int>(spec("loss", "a.Loss", {"Loss"}, {}), [](const Args&) { return 1; });
    QVERIFY_THROWS_EXCEPTION(std::logic_error, r.add<int>(spec("loss", "b.Loss", {"Loss"}, {}), [](const Args&) { return 2; }));
    QVERIFY(r.find("b.Loss") == nullptr);
  }

  void registryBuildsWithArgs() {
    Registry r;
    r.add<std::string>(spec("optimizer", "x.Opt", {"Opt"},
                            {arg("lr", ArgType::Float).or_default("0.5"), arg("steps", ArgType::IntList).or_default("[1, 2]"),
                             arg("names", ArgType::StringList), arg("flag", ArgType::Bool).or_default("false"),
                             arg("maybe", ArgType::Int).or_null().or_default("null")}),
                       [](const Args& a) {
                         std::string out = std::to_string(a.get_float("lr")) + "|";
                         for (int64_t s : a.get_ints("steps")) out += std::to_string(s) + ",";
                         out += "|" + a.get_strings("names").at(1) + "|" + (a.get_bool("flag") ? "T" : "F") + "|" +
                                (a.has("maybe") ? "has" : "none") + (a.is_null("maybe") ? "-null" : "");
                         return out;
                       });
    YAML::Node node = YAML::Load("{_component_: Opt, lr: 2, names: [a, b], flag: yes}");
    QCOMPARE(r.build<std::string>(node), std::string("2.000000|1,2,|b|T|none-null"));
    // The wrong product type, and unknown names, are errors (exceptions: validation comes first).
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, r.build<int>(node));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, r.build<std::string>(YAML::Load("{_component_: Nope}")));
    // A missing required value is an error too.
    Registry r2;
    r2.add<int64_t>(spec("loss", "x.L", {}, {arg("n", ArgType::Int).must_be_set()}), [](const Args& a) { return a.get_int("n"); });
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, r2.build<int64_t>(YAML::Load("{_component_: x.L}")));
    QCOMPARE(r2.build<int64_t>(YAML::Load("{_component_: x.L, n: 0x20}")), int64_t(32));
  }

  void builtinHasMetricLoggers() {
    const Registry& b = tb::components::builtin();
    for (const char* name : {"torchtune.training.metric_logging.DiskLogger", "DiskLogger",
                             "torchtune.training.metric_logging.StdoutLogger", "StdoutLogger"}) {
      const ComponentSpec* s = b.find(name);
      QVERIFY2(s, name);
      QCOMPARE(s->kind, std::string("metric_logger"));
    }
    QCOMPARE(b.find("DiskLogger")->args.front().name, std::string("log_dir"));
    QCOMPARE(b.find("torchtune.training.setup_torch_profiler")->kind, std::string("profiler"));
  }

  void recipeFromFileName_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("recipe");
    QTest::newRow("full") << "7B_full_single_device.yaml" << kFull;
    QTest::newRow("lora") << "7B_lora_single_device.yaml" << kLora;
    QTest::newRow("qlora") << "8B_qlora_single_device.yaml" << kLora;
    QTest::newRow("dash") << "my-lora-run.yaml" << kLora;
    QTest::newRow("word only") << "fullness.yaml" << "";
    QTest::newRow("none") << "experiment.yaml" << "";
  }
  void recipeFromFileName() {
    QFETCH(QString, name);
    QFETCH(QString, recipe);
    QTemporaryDir dir;
    QString path = dir.filePath(name);
    std::ofstream(path.toStdString()) << "seed: 1\n";
    QCOMPARE(QString::fromStdString(recipe_for_config(path.toStdString())), recipe);
  }

  void recipeCommentWins() {
    QTemporaryDir dir;
    QString path = dir.filePath("7B_lora_single_device.yaml");
    std::ofstream(path.toStdString()) << "# A config.\n#   recipe:  full_finetune_single_device\nseed: 1\n";
    QCOMPARE(recipe_for_config(path.toStdString()), std::string(kFull));
  }

  void bundledConfigsFromShareDir() {
    QTemporaryDir dir;
    QDir(dir.path()).mkpath("configs/fam");
    std::ofstream(dir.filePath("configs/fam/1B_lora_single_device.yaml").toStdString()) << "seed: 1\n";
    std::ofstream(dir.filePath("configs/fam/notes.txt").toStdString()) << "not a config\n";
    std::ofstream(dir.filePath("configs/top_full.yaml").toStdString()) << "# recipe: lora_finetune_single_device\n";
    qputenv("TUNEBENCH_SHARE_DIR", dir.path().toUtf8());
    std::vector<BundledConfig> all = bundled_configs();
    std::string found = find_config("fam/1B_lora_single_device");
    std::string found_ext = find_config("fam/1B_lora_single_device.yaml");
    std::string missing = find_config("fam/nope");
    std::string share = share_dir();
    LoadResult r = load_file("fam/1B_lora_singel_device");
    qunsetenv("TUNEBENCH_SHARE_DIR");
    QCOMPARE(share, dir.path().toStdString());
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[0].name, std::string("fam/1B_lora_single_device"));
    QCOMPARE(all[0].recipe, std::string(kLora));
    QCOMPARE(all[1].name, std::string("top_full"));
    QCOMPARE(all[1].recipe, std::string(kLora));
    QCOMPARE(found, dir.filePath("configs/fam/1B_lora_single_device.yaml").toStdString());
    QCOMPARE(found_ext, found);
    QVERIFY(missing.empty());
    QCOMPARE(r.diagnostics.size(), size_t(1));
    QCOMPARE(QString::fromStdString(r.diagnostics[0].format()),
             QString("fam/1B_lora_singel_device: no such file or bundled config (did you mean "
                     "'fam/1B_lora_single_device'?) (see 'tunebench-cli ls')"));
  }

  void shareDirBesideExecutable() {
    qunsetenv("TUNEBENCH_SHARE_DIR");
    // Tests run from <build>/tests: the build copies configs to <build>/share/tunebench.
    QCOMPARE(QDir(QString::fromStdString(share_dir())).canonicalPath(),
             QDir(QString(TB_BINARY_DIR) + "/share/tunebench").canonicalPath());
  }

  void diagnosticFormat() {
    QCOMPARE((Diagnostic{"a.yaml", 3, 7, "", "boom"}).format(), std::string("a.yaml:3:7: boom"));
    QCOMPARE((Diagnostic{"a.yaml", 0, 0, "", "boom"}).format(), std::string("a.yaml: boom"));
    QCOMPARE((Diagnostic{"", 0, 0, "x.y=1", "boom"}).format(), std::string("override 'x.y=1': boom"));
  }

  void emptyConfig() {
    LoadResult r = load_text("# only a comment\n", "empty.yaml");
    QCOMPARE(r.diagnostics.size(), size_t(1));
    QCOMPARE(r.diagnostics[0].format(), std::string("empty.yaml: the config is empty"));
    QVERIFY(!r.config);
  }

 private:
  static constexpr const char* kFull = "full_finetune_single_device";
  static constexpr const char* kLora = "lora_finetune_single_device";
};

TB_TEST(TestConfig)
#include "test_config.moc"
