// config/yaml_edit: the engine's YAML editing that the window's form and editor share. Edits are patched
// into the text where it stands (comments, blank lines and key order kept) and the result must read back
// as the edited tree; layouts beyond a patch regenerate the text from the tree under its header comments.
#include <QtTest>

#include "test_main.h"

#include <string>
#include <vector>

#include "config/yaml_edit.h"

using tb::config::YamlEdit;

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
    "  betas: [0.9, 0.999]\n"
    "batch_size: 2\n"
    "tag: 'a # not a comment'\n"
    "max_steps_per_epoch:\n"
    "layers:\n"
    "  - first\n"
    "  - second\n"
    "compile: false  # torch.compile\n";

YamlEdit set(const std::string& path, const std::string& yaml) { return {path, YAML::Load(yaml), false}; }
YamlEdit erase(const std::string& path) { return {path, YAML::Node(), true}; }

// `edits` applied to kConfig (or `text`) and its tree; the tree is checked against the text's reading.
std::string edited(const std::vector<YamlEdit>& edits, const std::string& text = kConfig) {
  YAML::Node tree = YAML::Load(text);
  const std::string out = tb::config::apply_yaml_edits(text, tree, edits);
  if (!tb::config::yaml_same(YAML::Load(out), tree))
    qFatal("the text says something else than the tree:\n%s", out.c_str());
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) qFatal("'%s' is not in the text", from.c_str());
  return text.replace(at, from.size(), to);
}

}  // namespace

class TestYamlEdit : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void dottedPaths() {
    YAML::Node tree = YAML::Load(kConfig);
    QCOMPARE(tb::config::yaml_get(tree, "optimizer.lr").Scalar(), std::string("2e-5"));
    QCOMPARE(tb::config::yaml_get(tree, "layers.1").Scalar(), std::string("second"));
    QVERIFY(!tb::config::yaml_get(tree, "layers.2").IsDefined());
    QVERIFY(!tb::config::yaml_get(tree, "optimizer.nope.deeper").IsDefined());
    QVERIFY(!tb::config::yaml_get(tree, "batch_size.x").IsDefined());
    QVERIFY(!tb::config::yaml_get(tree, "nope").IsDefined());
    QCOMPARE(tree.size(), YAML::Load(kConfig).size());  // reads never insert

    tb::config::yaml_set(tree, "tokenizer.max_seq_len", YAML::Load("128"));
    QCOMPARE(tb::config::yaml_get(tree, "tokenizer.max_seq_len").Scalar(), std::string("128"));
    tb::config::yaml_set(tree, "batch_size.inner", YAML::Load("1"));  // a scalar on the way becomes a map
    QVERIFY(tb::config::yaml_get(tree, "batch_size").IsMap());
    tb::config::yaml_remove(tree, "optimizer.lr");
    QVERIFY(!tb::config::yaml_get(tree, "optimizer.lr").IsDefined());
    tb::config::yaml_remove(tree, "compile");
    QVERIFY(!tb::config::yaml_get(tree, "compile").IsDefined());
    tb::config::yaml_remove(tree, "no.such.key");  // nothing to do
  }

  void sameIgnoresKeyOrderAndNullSpelling() {
    QVERIFY(tb::config::yaml_same(YAML::Load("{a: 1, b: [x, y]}"), YAML::Load("b: [x, y]\na: 1\n")));
    QVERIFY(!tb::config::yaml_same(YAML::Load("{a: 1, b: [x, y]}"), YAML::Load("{a: 1, b: [y, x]}")));
    QVERIFY(!tb::config::yaml_same(YAML::Load("{a: 1}"), YAML::Load("{a: 1, b: 2}")));
    QVERIFY(tb::config::yaml_same(YAML::Load("a: ~"), YAML::Load("a: null")));
    QVERIFY(!tb::config::yaml_same(YAML::Load("a: '1'"), YAML::Load("a: [1]")));
    QCOMPARE(tb::config::yaml_flow(YAML::Load("[1, [2, 3]]")), std::string("[1, [2, 3]]"));
    QCOMPARE(tb::config::yaml_flow(YAML::Node()), std::string("null"));
  }

  // A scalar or flow value is replaced where it stands: every other byte of the text stays.
  void valuesReplacedInPlace_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::newRow("top level, comment kept") << "compile"
                                             << "true"
                                             << "compile: false  #"
                                             << "compile: true  #";
    QTest::newRow("nested, spacing kept") << "optimizer.lr"
                                          << "0.0005"
                                          << "lr: 2e-5   #"
                                          << "lr: 0.0005   #";
    QTest::newRow("flow list") << "optimizer.betas"
                               << "[0.9, 0.95]"
                               << "[0.9, 0.999]"
                               << "[0.9, 0.95]";
    QTest::newRow("quoted scalar with a hash") << "tag"
                                               << "b"
                                               << "'a # not a comment'"
                                               << "b";
    QTest::newRow("empty value") << "max_steps_per_epoch"
                                 << "10"
                                 << "max_steps_per_epoch:\n"
                                 << "max_steps_per_epoch: 10\n";
    QTest::newRow("path with a space") << "output_dir"
                                       << "/data/run 2"
                                       << "/tmp/tb-test-run  #"
                                       << "/data/run 2  #";
  }
  void valuesReplacedInPlace() {
    QFETCH(QString, path);
    QFETCH(QString, value);
    QFETCH(QString, from);
    QFETCH(QString, to);
    const std::string out = edited({set(path.toStdString(), value.toStdString())});
    QVERIFY2(out == replaced(kConfig, from.toStdString(), to.toStdString()), out.c_str());
  }

  void missingKeysInsertedInTheirMap() {
    const std::string out =
        edited({set("optimizer.eps", "1e-8"), set("seed", "42"), set("tokenizer.max_seq_len", "128")});
    std::string expected = replaced(kConfig, "  betas: [0.9, 0.999]\n", "  betas: [0.9, 0.999]\n  eps: 1e-8\n");
    expected += "seed: 42\ntokenizer:\n  max_seq_len: 128\n";
    QVERIFY2(out == expected, out.c_str());
  }

  void removedKeysTakeTheirBlock() {
    const std::string out = edited({erase("optimizer.weight_decay"), erase("model"), erase("layers")});
    std::string expected = replaced(kConfig, "  weight_decay: 0.01\n", "");
    expected = replaced(expected, "model:\n  _component_: tunebench.models.llama2_stories15m\n", "");  // the blank line stays
    expected = replaced(expected, "layers:\n  - first\n  - second\n", "");
    QVERIFY2(out == expected, out.c_str());
    QCOMPARE(edited({erase("optimizer.nope.deeper")}), std::string(kConfig));  // below a missing map: nothing
  }

  // Layouts a patch does not handle: the text is regenerated from the tree under the header comments.
  void otherLayoutsAreRegenerated_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("value");
    QTest::newRow("flow map") << "# head\noptimizer: {_component_: AdamW, lr: 0.1}\nepochs: 1\n"
                              << "optimizer.lr"
                              << "0.5";
    QTest::newRow("block list replaced") << "# head\nlayers:\n  - a\n  - b\n"
                                         << "layers"
                                         << "[c]";
    QTest::newRow("scalar made a map") << "# head\nmodel: x\n"
                                       << "model.path"
                                       << "/m";
    QTest::newRow("empty map") << "# head\nmodel: {}\n"
                               << "model.path"
                               << "/m";
    QTest::newRow("map value") << "# head\nmodel:\n  a: 1\n"
                               << "model"
                               << "{b: 2}";
  }
  void otherLayoutsAreRegenerated() {
    QFETCH(QString, text);
    QFETCH(QString, path);
    QFETCH(QString, value);
    const std::string out = edited({set(path.toStdString(), value.toStdString())}, text.toStdString());
    QVERIFY2(out.rfind("# head\n", 0) == 0, out.c_str());
    QVERIFY2(tb::config::yaml_same(tb::config::yaml_get(YAML::Load(out), path.toStdString()),
                                   YAML::Load(value.toStdString())),
             out.c_str());
  }

  void textThatDoesNotParseIsReplacedByTheTree() {
    YAML::Node tree = YAML::Load("# head\nepochs: 1\n");
    const std::string out = tb::config::apply_yaml_edits("# head\nepochs: [unclosed\n", tree, {set("epochs", "2")});
    QVERIFY2(out.rfind("# head\n", 0) == 0, out.c_str());
    QCOMPARE(YAML::Load(out)["epochs"].as<int>(), 2);
  }

  void patchReportsWhatItCannotDo() {
    std::string text = "a: {b: 1}\n";
    QVERIFY(!tb::config::patch_yaml_text(text, set("a.b", "2")));
    text = "- not a map\n";
    QVERIFY(!tb::config::patch_yaml_text(text, set("a", "1")));
    text = "a: 1\n";
    QVERIFY(tb::config::patch_yaml_text(text, set("a", "2")));
    QCOMPARE(text, std::string("a: 2\n"));
  }
};

TB_TEST(TestYamlEdit)
#include "test_yaml_edit.moc"
