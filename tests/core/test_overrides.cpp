// Command-line overrides, every form torchtune's `tune run` accepts, and their errors.
#include <QtTest>

#include "test_main.h"

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "config/scalar.h"

using namespace tb::config;

namespace {

const char* kBase = R"(output_dir: runs/base
model:
  _component_: test.models.tiny
  dim: 64
tokenizer:
  _component_: test.tokenizer
  path: tokenizer.model
checkpointer:
  _component_: test.checkpointer
  checkpoint_dir: null
  checkpoint_files: [a.safetensors, b.safetensors]
  output_dir: ${output_dir}
dataset:
  _component_: test.datasets.alpaca
  packed: false
seed: 5
batch_size: 2
epochs: 1
optimizer:
  _component_: test.optim.AdamW
  lr: 2e-5
  weight_decay: 0.01
loss:
  _component_: test.loss.CE
clip_grad_norm: 1.0
)";

ComponentSpec spec(const char* kind, const char* name, std::vector<std::string> aliases, std::vector<ArgSpec> args) {
  ComponentSpec s;
  s.kind = kind;
  s.name = name;
  s.aliases = std::move(aliases);
  s.args = std::move(args);
  return s;
}

const Registry& test_registry() {
  static const Registry r = [] {
    Registry reg;
    auto none = [](const Args&) { return 0; };
    reg.add<int>(spec("model", "test.models.tiny", {}, {arg("dim", ArgType::Int).must_be_set(), arg("n_layers", ArgType::Int)}), none);
    reg.add<int>(spec("tokenizer", "test.tokenizer", {}, {arg("path", ArgType::Path).must_be_set()}), none);
    reg.add<int>(spec("checkpointer", "test.checkpointer", {},
                      {arg("checkpoint_dir", ArgType::Path).must_be_set().or_null(), arg("checkpoint_files", ArgType::StringList),
                       arg("output_dir", ArgType::Path).must_be_set()}),
                 none);
    reg.add<int>(spec("dataset", "test.datasets.alpaca", {"alpaca_dataset"}, {arg("packed", ArgType::Bool), arg("source", ArgType::String)}),
                 none);
    reg.add<int>(spec("dataset", "test.datasets.other", {}, {arg("packed", ArgType::Bool), arg("source", ArgType::String)}), none);
    reg.add<int>(spec("optimizer", "test.optim.AdamW", {"AdamW"},
                      {arg("lr", ArgType::Float), arg("weight_decay", ArgType::Float), arg("betas", ArgType::Any)}),
                 none);
    reg.add<int>(spec("optimizer", "test.optim.SGD", {"SGD"},
                      {arg("lr", ArgType::Float).must_be_set(), arg("weight_decay", ArgType::Float), arg("momentum", ArgType::Float)}),
                 none);
    reg.add<int>(spec("lr_scheduler", "test.sched.cosine", {}, {arg("num_warmup_steps", ArgType::Int).must_be_set()}), none);
    reg.add<int>(spec("loss", "test.loss.CE", {}, {}), none);
    tb::components::register_metric_loggers(reg);
    return reg;
  }();
  return r;
}

LoadResult apply(std::vector<std::string> overrides) {
  LoadOptions o;
  o.overrides = std::move(overrides);
  o.recipe = "full_finetune_single_device";
  o.registry = &test_registry();
  return load_text(kBase, "base.yaml", o);
}

Config ok(std::vector<std::string> overrides) {
  LoadResult r = apply(std::move(overrides));
  if (!r.ok()) qFatal("unexpected diagnostics:\n%s", format_diagnostics(r.diagnostics).c_str());
  return *r.config;
}

QStringList messages(const LoadResult& r) {
  QStringList out;
  for (const Diagnostic& d : r.diagnostics) out << QString::fromStdString(d.format());
  return out;
}

}  // namespace

class TestOverrides : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void baseIsValid() { QVERIFY2(apply({}).ok(), qPrintable(messages(apply({})).join("\n"))); }

  // a.b=v: the value is read as YAML, as OmegaConf's from_dotlist reads it.
  void valueTypes_data() {
    QTest::addColumn<QString>("override");
    QTest::addColumn<QString>("key");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("text");
    auto row = [](const char* o, const char* k, ScalarKind kind, const char* t) {
      QTest::newRow(o) << QString(o) << QString(k) << int(kind) << QString(t);
    };
    row("optimizer.lr=1e-4", "optimizer.lr", ScalarKind::Float, "1e-4");
    row("optimizer.lr=3", "optimizer.lr", ScalarKind::Int, "3");
    row("seed=null", "seed", ScalarKind::Null, "");
    row("seed=None", "seed", ScalarKind::Null, "");  // torchtune maps None to null
    row("seed=~", "seed", ScalarKind::Null, "");
    row("clip_grad_norm=", "clip_grad_norm", ScalarKind::Null, "");  // an empty value is YAML null
    row("dataset.packed=true", "dataset.packed", ScalarKind::Bool, "true");
    row("dataset.packed=True", "dataset.packed", ScalarKind::Bool, "True");
    row("dataset.source='true'", "dataset.source", ScalarKind::String, "true");
    row("dataset.source=a=b", "dataset.source", ScalarKind::String, "a=b");  // split at the first '='
    row("dataset.source=!!str 007", "dataset.source", ScalarKind::String, "007");
    row("tokenizer.path=dir with spaces/t.model", "tokenizer.path", ScalarKind::String, "dir with spaces/t.model");
  }
  void valueTypes() {
    QFETCH(QString, override);
    QFETCH(QString, key);
    QFETCH(int, kind);
    QFETCH(QString, text);
    Config c = ok({override.toStdString()});
    YAML::Node v = c.at(key.toStdString());
    QVERIFY(v.IsDefined());
    QCOMPARE(int(classify(v)), kind);
    if (kind != int(ScalarKind::Null)) QCOMPARE(QString::fromStdString(v.Scalar()), text);
  }

  void createsMissingMaps() {
    Config c = ok({"lr_scheduler._component_=test.sched.cosine", "lr_scheduler.num_warmup_steps=10",
                   "model.n_layers=3"});
    QCOMPARE(c.get_string("lr_scheduler._component_", ""), std::string("test.sched.cosine"));
    QCOMPARE(c.get_int("lr_scheduler.num_warmup_steps", 0), int64_t(10));
    QCOMPARE(c.get_int("model.n_layers", 0), int64_t(3));
    QCOMPARE(c.get_int("model.dim", 0), int64_t(64));  // the rest of model is untouched
  }

  void nullBecomesMap() {
    // A null value stands for "not set": a nested key may be set under it.
    Config c = ok({"metric_logger=null", "metric_logger._component_=DiskLogger", "metric_logger.log_dir=runs/x"});
    QCOMPARE(c.get_string("metric_logger.log_dir", ""), std::string("runs/x"));
  }

  void lists() {
    Config c = ok({"checkpointer.checkpoint_files=[m1.safetensors,m2.safetensors,m3.safetensors]",
                   "optimizer.betas=[0.8, 0.95]"});
    YAML::Node files = c.at("checkpointer.checkpoint_files");
    QVERIFY(files.IsSequence());
    QCOMPARE(files.size(), size_t(3));
    QCOMPARE(files[2].Scalar(), std::string("m3.safetensors"));
    QCOMPARE(c.at("optimizer.betas").size(), size_t(2));
    QCOMPARE(classify(c.at("optimizer.betas")[1]), ScalarKind::Float);
  }

  void listItem() {
    Config c = ok({"checkpointer.checkpoint_files.1=z.safetensors"});
    QCOMPARE(c.at("checkpointer.checkpoint_files")[0].Scalar(), std::string("a.safetensors"));
    QCOMPARE(c.at("checkpointer.checkpoint_files")[1].Scalar(), std::string("z.safetensors"));
  }

  void mapMerges() {
    Config c = ok({"optimizer={lr: 0.5, betas: [0.9, 0.99]}"});
    QCOMPARE(c.get_float("optimizer.lr", 0), 0.5);
    QCOMPARE(c.get_float("optimizer.weight_decay", 0), 0.01);  // kept: maps merge
    QCOMPARE(c.get_string("optimizer._component_", ""), std::string("test.optim.AdamW"));
  }

  void componentSwapKeepsArguments() {
    Config c = ok({"optimizer=test.optim.SGD"});
    QCOMPARE(c.get_string("optimizer._component_", ""), std::string("test.optim.SGD"));
    QCOMPARE(c.get_float("optimizer.lr", 0), 2e-5);
    QCOMPARE(c.get_float("optimizer.weight_decay", 0), 0.01);
    Config alias = ok({"dataset=alpaca_dataset", "dataset.packed=true"});
    QCOMPARE(alias.get_string("dataset._component_", ""), std::string("alpaca_dataset"));
    QCOMPARE(alias.get_bool("dataset.packed", false), true);
    Config explicit_name = ok({"dataset._component_=test.datasets.other"});
    QCOMPARE(explicit_name.get_string("dataset._component_", ""), std::string("test.datasets.other"));
    QCOMPARE(explicit_name.get_bool("dataset.packed", true), false);
  }

  void componentSwapErrorsPointAtTheOverride() {
    LoadResult r = apply({"optimizer=test.optim.Adamw"});
    QCOMPARE(messages(r), QStringList{"override 'optimizer=test.optim.Adamw': unknown component 'test.optim.Adamw' in "
                                      "optimizer (did you mean 'test.optim.AdamW'?)"});
  }

  void deletes() {
    Config c = ok({"~optimizer.weight_decay", "~clip_grad_norm", "~checkpointer.checkpoint_files.0"});
    QVERIFY(!c.at("optimizer.weight_decay").IsDefined());
    QVERIFY(c.at("optimizer.lr").IsDefined());
    QVERIFY(c.at("clip_grad_norm").IsNull());  // gone from the file; the schema default (null) is filled in
    QCOMPARE(c.at("checkpointer.checkpoint_files").size(), size_t(1));
    QCOMPARE(c.at("checkpointer.checkpoint_files")[0].Scalar(), std::string("b.safetensors"));
  }

  void deleteThenSet() {
    Config c = ok({"~optimizer", "optimizer._component_=SGD", "optimizer.lr=0.1"});
    QVERIFY(!c.at("optimizer.weight_decay").IsDefined());
    QCOMPARE(c.get_float("optimizer.lr", 0), 0.1);
  }

  void lastOverrideWins() { QCOMPARE(ok({"seed=1", "seed=2"}).get_int("seed", 0), int64_t(2)); }

  void overridesChangeInterpolatedValues() {
    Config c = ok({"output_dir=runs/exp7"});
    QCOMPARE(c.get_string("checkpointer.output_dir", ""), std::string("runs/exp7"));
    Config d = ok({"tokenizer.path=${output_dir}/tok.model"});
    QCOMPARE(d.get_string("tokenizer.path", ""), std::string("runs/base/tok.model"));
  }

  void errors_data() {
    QTest::addColumn<QStringList>("overrides");
    QTest::addColumn<QStringList>("expected");
    auto row = [](const char* name, QStringList o, QStringList e) { QTest::newRow(name) << o << e; };
    row("no equals", {"seed"}, {"override 'seed': expected key=value or ~key (e.g. optimizer.lr=1e-4, ~clip_grad_norm)"});
    row("empty key", {"=5"}, {"override '=5': expected key=value with a dotted key such as optimizer.lr"});
    row("empty segment", {"optimizer..lr=1"}, {"override 'optimizer..lr=1': expected key=value with a dotted key such as optimizer.lr"});
    row("bare tilde", {"~"}, {"override '~': expected ~key.path, e.g. ~optimizer.weight_decay"});
    row("delete missing", {"~optimizer.weight_decy"},
        {"override '~optimizer.weight_decy': cannot remove 'optimizer.weight_decy': 'optimizer' has no key 'weight_decy' "
         "(did you mean 'weight_decay'?)"});
    row("delete missing top", {"~nothing_here"},
        {"override '~nothing_here': cannot remove 'nothing_here': the config has no key 'nothing_here'"});
    row("delete component name", {"~model._component_"},
        {"override '~model._component_': a component's '_component_' cannot be removed on its own; remove the whole key "
         "(~model)"});
    row("through a scalar", {"seed.value=3"},
        {"override 'seed.value=3': cannot set 'seed.value': 'seed' is an integer ('5'), not a map"});
    row("bad list index", {"checkpointer.checkpoint_files.5=x"},
        {"override 'checkpointer.checkpoint_files.5=x': 'checkpointer.checkpoint_files' is a list of 2 items; '5' is not an "
         "index into it"});
    row("bad yaml", {"optimizer.betas=[0.9, 0.99"},
        {"override 'optimizer.betas=[0.9, 0.99': the value is not valid YAML: end of sequence flow not found"});
    row("wrong type", {"optimizer.lr=fast"},
        {"override 'optimizer.lr=fast': optimizer.lr: expected a number, got the string 'fast'"});
    row("unknown nested key", {"optimizer.lerning_rate=1e-4"},
        {"override 'optimizer.lerning_rate=1e-4': unknown key 'lerning_rate' in optimizer (did you mean 'lr'?)"});
    row("unknown top key", {"epoch=3"}, {"override 'epoch=3': unknown key 'epoch' (did you mean 'epochs'?)"});
    row("bad interpolation", {"tokenizer.path=${nope}/t.model"},
        {"override 'tokenizer.path=${nope}/t.model': interpolation '${nope}': key 'nope' not found"});
    row("all at once", {"seed", "optimizer.lr=fast", "~gone"},
        {"override 'seed': expected key=value or ~key (e.g. optimizer.lr=1e-4, ~clip_grad_norm)",
         "override '~gone': cannot remove 'gone': the config has no key 'gone'",
         "override 'optimizer.lr=fast': optimizer.lr: expected a number, got the string 'fast'"});
  }
  void errors() {
    QFETCH(QStringList, overrides);
    QFETCH(QStringList, expected);
    std::vector<std::string> o;
    for (const QString& s : overrides) o.push_back(s.toStdString());
    LoadResult r = apply(o);
    QVERIFY(!r.ok());
    QVERIFY(!r.config.has_value());
    QCOMPARE(messages(r), expected);
  }
};

TB_TEST(TestOverrides)
#include "test_overrides.moc"
