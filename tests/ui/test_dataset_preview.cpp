// The window's dataset preview and data choices, on a model folder made from the Qwen fixture and Qwen3's
// real chat template: the model's template is picked when the folder has one, the preview shows the text
// the template writes with the assistant's turns highlighted and warns of fully masked samples, and a
// malformed or CSV data file is read by the same code as the CLI (same file:line message).
#include <QSignalSpy>
#include <QTextBrowser>
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ConfigDocument.h"
#include "DatasetPreview.h"
#include "RunSetupPanel.h"
#include "data/row_sources.h"

namespace {

using tbtest::read_file;

void writeFile(const QString& path, const std::string& text) { tbtest::write_file(path.toStdString(), text); }

// A Qwen3-shaped folder: config.json, a safetensors file holding no tensors, tokenizer.json and the template.
void qwen3Folder(const QTemporaryDir& dir) {
  writeFile(dir.filePath("config.json"),
            R"({"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"num_hidden_layers":2,"vocab_size":1900,"max_position_embeddings":512,
      "rope_theta":1000000.0,"rms_norm_eps":1e-6,"hidden_act":"silu","tie_word_embeddings":true})");
  writeFile(dir.filePath("model.safetensors"), std::string("\x02\0\0\0\0\0\0\0{}", 10));  // no tensors, a valid header
  writeFile(dir.filePath("tokenizer.json"), read_file(TB_SOURCE_DIR "/tests/data/tokenizers/qwen/tokenizer.json"));
  nlohmann::json config = {{"bos_token", nullptr},
                           {"eos_token", "<|im_end|>"},
                           {"pad_token", "<|endoftext|>"},
                           {"chat_template", read_file(TB_SOURCE_DIR "/tests/data/chat_templates/qwen3.jinja")}};
  writeFile(dir.filePath("tokenizer_config.json"), config.dump());
}

const char* kConfig =
    "output_dir: /tmp/tb-preview-test\n"
    "model:\n  _component_: tunebench.models.lora_llama2_stories15m\n  lora_rank: 4\n  lora_attn_modules: [q_proj, v_proj]\n"
    "tokenizer:\n  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: old.model\n  max_seq_len: 40\n"
    "checkpointer:\n  _component_: FullModelHFCheckpointer\n  checkpoint_dir: null\n  output_dir: /tmp/tb-preview-test\n"
    "optimizer:\n  _component_: torch.optim.AdamW\n  lr: 1e-4\n"
    "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\nbatch_size: 1\nepochs: 1\n";

}  // namespace

class TestDatasetPreview : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void previewFollowsTheModelsTemplate() {
    QTemporaryDir dir;
    qwen3Folder(dir);
    // The second conversation's answer lies past max_seq_len (40): every label masked.
    writeFile(dir.filePath("chat.jsonl"),
              R"({"messages": [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "Hello!"}]}
{"messages": [{"role": "user", "content": "Tell me a long story about a fox who jumps over the lazy dog again and again."}, {"role": "assistant", "content": "Once upon a time."}]}
)");
    tb::ui::ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    tb::ui::RunSetupPanel panel(&doc);
    QString error;
    QVERIFY2(panel.openModelFolder(dir.path(), &error), qPrintable(error));
    // The folder's own tokenizer and template, keeping the tokenizer's max_seq_len.
    QCOMPARE(doc.scalar("tokenizer._component_"), QString("tunebench.data.hf_tokenizer"));
    QCOMPARE(doc.scalar("tokenizer.path"), QDir(dir.path()).absolutePath());
    QCOMPARE(doc.scalar("tokenizer.max_seq_len"), QString("40"));
    QSignalSpy ready(&panel, &tb::ui::RunSetupPanel::previewReady);
    QVERIFY2(panel.useDatasetFile(dir.filePath("chat.jsonl"), &error), qPrintable(error));
    QCOMPARE(doc.scalar("dataset._component_"), QString("torchtune.datasets.chat_dataset"));
    QVERIFY(ready.wait(60000));
    const QString shown = panel.previewView()->toPlainText();
    QVERIFY2(shown.contains("Formatted by the model's chat template"), qPrintable(shown));
    QVERIFY2(shown.contains("<|im_start|>user\nSay hello.<|im_end|>"), qPrintable(shown));
    QVERIFY2(shown.contains("every label is masked") || shown.contains("whose every label is masked"), qPrintable(shown));

    // The HTML highlights exactly the assistant's turn (and greys the rest).
    const auto result = tb::ui::buildDatasetPreview(*doc.validate().config, 3);
    QVERIFY2(result.tokenized, qPrintable(result.note));
    QCOMPARE(result.samples.size(), 1);  // the fully masked sample is dropped, and counted
    QVERIFY2(result.counts.contains("1 fully masked"), qPrintable(result.counts));
    const QString html = tb::ui::previewHtml(result);
    QVERIFY2(html.contains("<span style='background:#dcefd8'>&lt;think&gt;\n\n&lt;/think&gt;\n\nHello!&lt;|im_end|&gt;</span>"),
             qPrintable(html));
    QVERIFY2(html.contains("<span style='color:#999999'>&lt;|im_start|&gt;user\nSay hello.&lt;|im_end|&gt;\n"
                           "&lt;|im_start|&gt;assistant\n</span>"),
             qPrintable(html));
  }

  // A malformed file: the window says what the CLI says (file and line), not a guess about its shape.
  void badFileGetsTheCliMessage() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.json");
    writeFile(bad, "[\n{\"instruction\": \"a\", \"output\": \"b\"},\n{\"instruction\": \"c\", \"output\": \"d\"}\n");
    std::string cli;
    try {
      tb::data::load_rows("json", {bad.toStdString()});
    } catch (const std::exception& e) {
      cli = e.what();
    }
    QVERIFY2(QString::fromStdString(cli).startsWith(bad + ":"), cli.c_str());
    tb::ui::ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    tb::ui::RunSetupPanel panel(&doc);
    QString error;
    QVERIFY(!panel.useDatasetFile(bad, &error));
    QCOMPARE(error, QString::fromStdString(cli));
  }

  void csvFileIsAlpaca() {
    tb::ui::ConfigDocument doc;
    doc.loadText(kConfig, {}, {});
    tb::ui::RunSetupPanel panel(&doc);
    QString error;
    QVERIFY2(panel.useDatasetFile(TB_SOURCE_DIR "/tests/data/datasets/alpaca_quoted.csv", &error), qPrintable(error));
    QCOMPARE(doc.scalar("dataset._component_"), QString("torchtune.datasets.alpaca_dataset"));
    QCOMPARE(doc.scalar("dataset.source"), QString("csv"));
  }
};

TB_TEST(TestDatasetPreview)
#include "test_dataset_preview.moc"
