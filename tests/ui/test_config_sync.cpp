// The run-setup form and the YAML editor stay in sync both ways: a form change rewrites the text (in
// place, comments kept) and an edit of the text, once typing pauses, updates the form.
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QtTest>

#include "test_main.h"

#include "ConfigDocument.h"
#include "ConfigEditorPanel.h"
#include "RunSetupPanel.h"
#include "YamlEditor.h"

using tb::ui::RecipeKind;

namespace {
const char* kConfig =
    "# A config written for this test.\n"
    "output_dir: /tmp/tb-sync-test\n"
    "model:\n"
    "  _component_: tunebench.models.llama2_stories15m  # the model\n"
    "optimizer:\n"
    "  _component_: torch.optim.AdamW\n"
    "  lr: 2e-5\n"
    "batch_size: 2\n"
    "epochs: 1\n"
    "dtype: fp32\n"
    "compile: false  # torch.compile\n";
}  // namespace

class TestConfigSync : public QObject {
  Q_OBJECT
  tb::ui::ConfigDocument* doc_ = nullptr;
  tb::ui::RunSetupPanel* setup_ = nullptr;
  tb::ui::ConfigEditorPanel* editor_ = nullptr;

  QString text() const { return editor_->editor()->toPlainText(); }

 private Q_SLOTS:
  void init() {
    doc_ = new tb::ui::ConfigDocument;
    doc_->loadText(kConfig, {}, {});
    setup_ = new tb::ui::RunSetupPanel(doc_);
    editor_ = new tb::ui::ConfigEditorPanel(doc_);
    editor_->show();
  }
  void cleanup() {
    delete editor_;
    delete setup_;
    delete doc_;
  }

  void formShowsTheConfig() {
    QCOMPARE(text(), QString(kConfig));
    QCOMPARE(setup_->recipeCombo()->currentData().toInt(), int(RecipeKind::Full));
    QVERIFY(!setup_->compileBox()->isChecked());
    QCOMPARE(setup_->batchSizeBox()->value(), 2);
    QCOMPARE(setup_->learningRateEdit()->text(), QString("2e-5"));
    QCOMPARE(setup_->modelCombo()->currentText(), QString("llama2_stories15m"));
    QVERIFY(!setup_->loraRankBox()->isEnabled());
  }

  void recipeChangeUpdatesTheYaml_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("component");
    QTest::newRow("LoRA") << int(RecipeKind::Lora) << "tunebench.models.lora_llama2_stories15m";
    QTest::newRow("QLoRA") << int(RecipeKind::Qlora) << "tunebench.models.qlora_llama2_stories15m";
  }
  void recipeChangeUpdatesTheYaml() {
    QFETCH(int, kind);
    QFETCH(QString, component);
    auto* combo = setup_->recipeCombo();
    combo->setCurrentIndex(combo->findData(kind));
    const QStringList lines = text().split('\n');
    QVERIFY2(lines.contains("  _component_: " + component + "  # the model"), qPrintable(text()));
    QVERIFY2(lines.contains("  lora_rank: 8"), qPrintable(text()));
    QVERIFY(lines.contains("compile: false  # torch.compile"));
    QVERIFY(setup_->loraRankBox()->isEnabled());
    // Back to full: the LoRA keys go again.
    combo->setCurrentIndex(combo->findData(int(RecipeKind::Full)));
    QCOMPARE(text(), QString(kConfig));
  }

  void compileToggleUpdatesTheYaml() {
    setup_->compileBox()->click();
    QVERIFY2(text().split('\n').contains("compile: true  # torch.compile"), qPrintable(text()));
    setup_->compileBox()->click();
    QCOMPARE(text(), QString(kConfig));
  }

  void hyperParametersUpdateTheYaml() {
    setup_->batchSizeBox()->setValue(8);
    setup_->maxStepsBox()->setValue(25);
    setup_->learningRateEdit()->setText("3e-4");
    Q_EMIT setup_->learningRateEdit()->editingFinished();
    setup_->dtypeCombo()->setCurrentText("bf16");
    const QStringList lines = text().split('\n');
    QVERIFY(lines.contains("batch_size: 8"));
    QVERIFY(lines.contains("max_steps_per_epoch: 25"));
    QVERIFY(lines.contains("  lr: 3e-4"));
    QVERIFY(lines.contains("dtype: bf16"));
    setup_->maxStepsBox()->setValue(0);  // "all": null
    QVERIFY2(text().split('\n').contains("max_steps_per_epoch: null"), qPrintable(text()));
  }

  void editingTheYamlUpdatesTheForm() {
    QString edited = kConfig;
    edited.replace("batch_size: 2", "batch_size: 7");
    edited.replace("tunebench.models.llama2_stories15m", "tunebench.models.lora_llama2_stories15m");
    edited.replace("compile: false", "compile: true");
    editor_->editor()->setPlainText(edited);
    // Debounced: nothing yet, then the form follows once typing pauses.
    QCOMPARE(setup_->batchSizeBox()->value(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(setup_->batchSizeBox()->value(), 7, 2000);
    QCOMPARE(setup_->recipeCombo()->currentData().toInt(), int(RecipeKind::Lora));
    QVERIFY(setup_->compileBox()->isChecked());
    QVERIFY(setup_->loraRankBox()->isEnabled());
    QCOMPARE(text(), edited);  // the form did not rewrite what was typed
  }

  void typingUpdatesTheForm() {
    auto* editor = editor_->editor();
    QTextCursor c(editor->document());
    c.setPosition(int(QString(kConfig).indexOf("epochs: 1") + int(strlen("epochs: 1"))));
    editor->setTextCursor(c);
    editor->setFocus();
    QTest::keyClick(editor, Qt::Key_Backspace);
    QTest::keyClicks(editor, "12");
    QTRY_COMPARE_WITH_TIMEOUT(setup_->epochsBox()->value(), 12, 2000);
    QVERIFY(text().split('\n').contains("epochs: 12"));
  }
};

TB_TEST(TestConfigSync)
#include "test_config_sync.moc"
