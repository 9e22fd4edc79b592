// ConfigDocument: form edits patch the YAML text in place (comments kept), fall back to regenerating
// it when the layout is beyond a patch, and the CLI overrides turn the base config into the edited one.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "test_main.h"

#include <sys/stat.h>

#include "ConfigDocument.h"
#include "config/yaml_edit.h"

using tb::ui::ConfigDocument;
using tb::ui::ConfigEdit;
using tb::ui::RecipeKind;

namespace {
const char* kConfig =
    "# recipe: full_finetune_single_device\n"
    "# A config written for this test.\n"
    "output_dir: /tmp/tb-test-run  # where it goes\n"
    "model:\n"
    "  _component_: tunebench.models.llama2_stories15m\n"
    "\n"
    "optimizer:\n"
    "  _component_: torch.optim.AdamW\n"
    "  lr: 2e-5   # the learning rate\n"
    "  weight_decay: 0.01\n"
    "batch_size: 2\n"
    "epochs: 1\n"
    "max_steps_per_epoch: null\n"
    "compile: false  # torch.compile\n";
}  // namespace

class TestConfigDocument : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void scalarEditKeepsComments_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expectedLine");
    QTest::newRow("top-level with comment") << "compile" << "true" << "compile: true  # torch.compile";
    QTest::newRow("nested with comment") << "optimizer.lr" << "0.0005" << "  lr: 0.0005   # the learning rate";
    QTest::newRow("null to number") << "max_steps_per_epoch" << "10" << "max_steps_per_epoch: 10";
    QTest::newRow("path") << "output_dir" << "/data/run 2" << "output_dir: /data/run 2  # where it goes";
  }
  void scalarEditKeepsComments() {
    QFETCH(QString, path);
    QFETCH(QString, value);
    QFETCH(QString, expectedLine);
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    QSignalSpy spy(&doc, &ConfigDocument::changed);
    doc.setScalar(path, value);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.first().first().value<ConfigDocument::Origin>(), ConfigDocument::Origin::Form);
    const QStringList lines = doc.text().split('\n');
    QVERIFY2(lines.contains(expectedLine), qPrintable(doc.text()));
    QVERIFY(doc.text().startsWith("# recipe: full_finetune_single_device\n# A config written for this test.\n"));
    QCOMPARE(doc.scalar(path), value);
    // Every other line is untouched.
    QCOMPARE(lines.size(), QString(kConfig).split('\n').size());
  }

  void insertsMissingKeysInTheirMap() {
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    doc.apply({ConfigEdit::scalar("optimizer.betas", "[0.9, 0.95]"), ConfigEdit::scalar("seed", "42"),
               ConfigEdit::scalar("tokenizer.max_seq_len", "128")});
    const QString t = doc.text();
    // betas goes at the end of the optimizer map, before batch_size; the others at the end of the file.
    QVERIFY2(t.contains("  weight_decay: 0.01\n  betas: [0.9, 0.95]\nbatch_size: 2\n"), qPrintable(t));
    QVERIFY2(t.endsWith("seed: 42\ntokenizer:\n  max_seq_len: 128\n"), qPrintable(t));
    QVERIFY(t.contains("# the learning rate"));
    QCOMPARE(doc.scalar("tokenizer.max_seq_len"), QString("128"));
  }

  void removesKeysAndBlocks() {
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    doc.apply({ConfigEdit::erase("optimizer.weight_decay"), ConfigEdit::erase("model")});
    const QString t = doc.text();
    QVERIFY2(!t.contains("weight_decay"), qPrintable(t));
    QVERIFY2(!t.contains("model:") && !t.contains("llama2_stories15m"), qPrintable(t));
    QVERIFY(t.contains("# the learning rate"));
    QVERIFY(!doc.value("model").IsDefined());
  }

  void flowMapFallsBackToRegeneratedText() {
    ConfigDocument doc;
    doc.loadText("# head comment\noptimizer: {_component_: torch.optim.AdamW, lr: 0.1}\nepochs: 1\n", {}, {});
    doc.setScalar("optimizer.lr", "0.5");
    QCOMPARE(doc.scalar("optimizer.lr"), QString("0.5"));
    QCOMPARE(doc.scalar("optimizer._component_"), QString("torch.optim.AdamW"));
    QVERIFY2(doc.text().startsWith("# head comment\n"), qPrintable(doc.text()));
    // The regenerated text parses to the same tree.
    QVERIFY(tb::config::yaml_same(YAML::Load(doc.text().toStdString()), doc.tree()));
  }

  void textEditReplacesTree() {
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    QSignalSpy spy(&doc, &ConfigDocument::changed);
    QString t = kConfig;
    t.replace("batch_size: 2", "batch_size: 7");
    doc.setText(t);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.first().first().value<ConfigDocument::Origin>(), ConfigDocument::Origin::Text);
    QCOMPARE(doc.scalar("batch_size"), QString("7"));
    // Broken YAML keeps the last good tree and says why.
    doc.setText(t + "model: [unclosed\n");
    QVERIFY(!doc.parses());
    QCOMPARE(doc.scalar("batch_size"), QString("7"));
  }

  void recipeKindFollowsTheModel_data() {
    QTest::addColumn<QString>("component");
    QTest::addColumn<QString>("quantize");
    QTest::addColumn<int>("kind");
    QTest::newRow("preset") << "tunebench.models.llama2_stories15m" << "" << int(RecipeKind::Full);
    QTest::newRow("lora preset") << "tunebench.models.lora_llama2_stories15m" << "" << int(RecipeKind::Lora);
    QTest::newRow("qlora preset") << "torchtune.models.llama2.qlora_llama2_7b" << "" << int(RecipeKind::Qlora);
    QTest::newRow("generic lora") << "torchtune.models.llama2.lora_llama2" << "false" << int(RecipeKind::Lora);
    QTest::newRow("generic qlora") << "torchtune.models.llama2.lora_llama2" << "true" << int(RecipeKind::Qlora);
  }
  void recipeKindFollowsTheModel() {
    QFETCH(QString, component);
    QFETCH(QString, quantize);
    QFETCH(int, kind);
    QString text = "model:\n  _component_: " + component + "\n";
    if (!quantize.isEmpty()) text += "  quantize_base: " + quantize + "\n";
    ConfigDocument doc;
    doc.loadText(text, {}, {});
    QCOMPARE(int(doc.recipeKind()), kind);
    QCOMPARE(doc.recipe(), QString(kind == int(RecipeKind::Full) ? "full_finetune_single_device"
                                                                   : "lora_finetune_single_device"));
  }

  void switchingRecipeRewritesTheModel() {
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    doc.setRecipeKind(RecipeKind::Qlora);
    QCOMPARE(doc.scalar("model._component_"), QString("tunebench.models.qlora_llama2_stories15m"));
    QCOMPARE(doc.scalar("model.lora_rank"), QString("8"));
    QCOMPARE(doc.scalar("model.lora_alpha"), QString("16"));
    QCOMPARE(doc.value("model.lora_attn_modules").size(), size_t(3));
    QVERIFY(doc.text().contains("# the learning rate"));
    doc.setRecipeKind(RecipeKind::Full);
    QCOMPARE(doc.scalar("model._component_"), QString("tunebench.models.llama2_stories15m"));
    QVERIFY(!doc.value("model.lora_rank").IsDefined());
    QVERIFY2(!doc.text().contains("lora"), qPrintable(doc.text()));
    // A generic builder has no qlora_ variant: QLoRA is lora_ + quantize_base.
    doc.loadText("model:\n  _component_: torchtune.models.llama2.llama2\n  vocab_size: 512\n", {}, {});
    doc.setRecipeKind(RecipeKind::Qlora);
    QCOMPARE(doc.scalar("model._component_"), QString("torchtune.models.llama2.lora_llama2"));
    QCOMPARE(doc.scalar("model.quantize_base"), QString("true"));
    QCOMPARE(doc.recipeKind(), RecipeKind::Qlora);
  }

  void cliOverridesTurnTheBaseIntoTheEdit() {
    QTemporaryDir dir;
    const QString path = dir.filePath("base config.yaml");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    // The required components, so the config system loads it (their names are not looked up here).
    f.write(QByteArray(kConfig) +
            "tokenizer: {_component_: t, path: x}\ncheckpointer: {_component_: c}\ndataset: {_component_: d}\n"
            "loss: {_component_: l}\n");
    f.close();
    ConfigDocument doc;
    QVERIFY(doc.loadFile(path));
    QCOMPARE(doc.cliOverrides(), QStringList());
    doc.apply({ConfigEdit::scalar("compile", "true"), ConfigEdit::scalar("optimizer.lr", "0.001"),
               ConfigEdit::erase("optimizer.weight_decay"), ConfigEdit::scalar("optimizer.betas", "[0.9, 0.95]")});
    QCOMPARE(doc.cliOverrides(),
             QStringList({"~optimizer.weight_decay", "compile=true", "optimizer.betas=[0.9,0.95]", "optimizer.lr=0.001"}));
    QCOMPARE(doc.cliCommand(), "tunebench-cli run full_finetune_single_device --config '" +
                                   QFileInfo(path).absoluteFilePath() +
                                   "' '~optimizer.weight_decay' compile=true 'optimizer.betas=[0.9,0.95]' "
                                   "optimizer.lr=0.001");
    // The overrides applied to the saved file by the config system give the edited tree.
    tb::config::LoadOptions options;
    for (const QString& o : doc.cliOverrides()) options.overrides.push_back(o.toStdString());
    const auto viaCli = tb::config::load_file(path.toStdString(), options);
    tb::config::LoadOptions plain;
    const auto direct = tb::config::load_text(doc.text().toStdString(), "edited.yaml", plain);
    for (const auto& d : viaCli.diagnostics) qWarning() << d.format().c_str();
    for (const auto& d : direct.diagnostics) qWarning() << d.format().c_str();
    QVERIFY(viaCli.ok() && direct.ok());
    QVERIFY(tb::config::yaml_same(viaCli.config->root, direct.config->root));
  }

  void saveIsAtomicAndClearsModified() {
    QTemporaryDir dir;
    ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    doc.setScalar("epochs", "3");
    QVERIFY(doc.isModified());
    const QString path = dir.filePath("saved.yaml");
    QVERIFY(doc.saveAs(path));
    QVERIFY(!doc.isModified());
    QCOMPARE(doc.filePath(), QFileInfo(path).absoluteFilePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), doc.text());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"saved.yaml"});  // no temporary left
    QCOMPARE(doc.cliOverrides(), QStringList());
    // A FIFO (or a device, a link) is refused and stays what it was, as the engine's writers refuse it.
    const QString fifo = dir.filePath("pipe.yaml");
    QVERIFY(::mkfifo(fifo.toLocal8Bit().constData(), 0644) == 0);
    QString error;
    QVERIFY(!doc.saveAs(fifo, &error));
    QVERIFY2(error.contains("is a FIFO"), qPrintable(error));
    QCOMPARE(doc.filePath(), QFileInfo(path).absoluteFilePath());
  }

  void shellQuoting_data() {
    QTest::addColumn<QString>("arg");
    QTest::addColumn<QString>("quoted");
    QTest::newRow("plain") << "a.b=1e-5" << "a.b=1e-5";
    QTest::newRow("space") << "output_dir=/x y" << "'output_dir=/x y'";
    QTest::newRow("glob") << "a=[1,2]" << "'a=[1,2]'";
    QTest::newRow("quote") << "a=it's" << "'a=it'\\''s'";
    QTest::newRow("tilde") << "~a.b" << "'~a.b'";
  }
  void shellQuoting() {
    QFETCH(QString, arg);
    QFETCH(QString, quoted);
    QCOMPARE(tb::ui::shellQuote(arg), quoted);
  }
};

TB_TEST(TestConfigDocument)
#include "test_config_document.moc"
