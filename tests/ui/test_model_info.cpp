// The model facts the setup panel shows: a Hugging Face config.json read into an architecture, the
// parameter count against published figures and hand counts, and the memory estimate's terms.
#include <QComboBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "test_main.h"

#include "ConfigDocument.h"
#include "ModelInfo.h"
#include "RunSetupPanel.h"
#include "checkpoint/hf_config.h"
#include "tiny_args.h"

using tb::ui::RecipeKind;

namespace {
// The published Llama-2-7b-hf config.json, abridged to the fields that shape the model.
const char* kLlama2_7b = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
  "intermediate_size":11008,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,
  "vocab_size":32000,"max_position_embeddings":4096,"rms_norm_eps":1e-05,"tie_word_embeddings":false})";


// A safetensors file with no tensors: the 8-byte header length, then "{}" (opening a folder reads headers).
const QByteArray kEmptySafetensors("\x02\0\0\0\0\0\0\0{}", 10);

void writeFile(const QString& path, const QByteArray& content) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(content);
}
}  // namespace

class TestModelInfo : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void readsHfConfigJson() {
    QTemporaryDir dir;
    writeFile(dir.filePath("config.json"), kLlama2_7b);
    QString error;
    const auto args = tb::ui::modelArgsFromHfFolder(dir.path(), &error);
    QVERIFY2(args, qPrintable(error));
    QCOMPARE(args->embed_dim, int64_t(4096));
    QCOMPARE(args->num_kv_heads, int64_t(32));
    QCOMPARE(args->max_seq_len, int64_t(4096));
    // Meta's Llama 2 7B: 6,738,415,616 parameters.
    QCOMPARE(args->parameter_count(), int64_t(6738415616));
    QCOMPARE(tb::checkpoint::hf_model_type(nlohmann::json::parse(kLlama2_7b)), std::string("LLAMA2"));
  }

  // The window reads config.json through the engine, so what the engine supports the window shows:
  // Llama 3.1's rope scaling (which the window's own reader used to drop) and its refusals.
  void readsHfConfigAsTheEngineDoes() {
    QTemporaryDir dir;
    writeFile(dir.filePath("config.json"), R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,
      "num_attention_heads":4,"num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":128256,
      "rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3","factor":32.0,"low_freq_factor":1.0,
      "high_freq_factor":4.0,"original_max_position_embeddings":8192},"tie_word_embeddings":true})");
    QString error;
    const auto args = tb::ui::modelArgsFromHfFolder(dir.path(), &error);
    QVERIFY2(args, qPrintable(error));
    QVERIFY(args->rope_scaling.has_value());
    QCOMPARE(args->rope_scaling->scale_factor, 32.0);
    QCOMPARE(args->rope_base, 500000.0);
    QVERIFY(args->differences(tb::checkpoint::read_hf_model_args(dir.path().toStdString())).empty());

    writeFile(dir.filePath("config.json"), R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,
      "num_attention_heads":4,"num_hidden_layers":2,"vocab_size":512,"attention_bias":true})");
    QVERIFY(!tb::ui::modelArgsFromHfFolder(dir.path(), &error));
    QVERIFY2(error.contains("attention_bias"), qPrintable(error));
  }

  void reportsBadConfigJson_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("missing field") << QByteArray(R"({"num_hidden_layers":2})") << "missing 'hidden_size'";
    QTest::newRow("not json") << QByteArray("{oops") << "not valid JSON";
  }
  void reportsBadConfigJson() {
    QFETCH(QByteArray, json);
    QFETCH(QString, message);
    QTemporaryDir dir;
    writeFile(dir.filePath("config.json"), json);
    QString error;
    QVERIFY(!tb::ui::modelArgsFromHfFolder(dir.path(), &error));
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY2(error.contains(dir.filePath("config.json")), qPrintable(error));
  }

  // The Model box says the estimate in words (the numbers are the engine's: test_memory_estimate).
  void describesTheEstimate() {
    tb::ui::ConfigDocument doc;
    doc.loadText("optimizer_in_bwd: True\noptimizer:\n  _component_: bitsandbytes.optim.PagedAdamW8bit\n", {}, {});
    const auto e = tb::training::estimate_memory(tbtest::tiny_args(), tb::training::Adapters::None, "fp32", {}, 1, 16,
                                                 tb::training::optimizer_states_of(doc.tree()));
    const QString text = tb::ui::describeEstimate(e);
    QVERIFY2(text.contains("one at a time") && text.contains("8-bit AdamW"), qPrintable(text));
  }

  void openModelFolderPointsTheConfigAtIt() {
    QTemporaryDir dir;
    writeFile(dir.filePath("config.json"), kLlama2_7b);
    writeFile(dir.filePath("model-00001-of-00002.safetensors"), kEmptySafetensors);
    writeFile(dir.filePath("model-00002-of-00002.safetensors"), kEmptySafetensors);
    writeFile(dir.filePath("tokenizer.model"), "x");
    tb::ui::ConfigDocument doc;
    doc.loadText("model:\n  _component_: tunebench.models.lora_llama2_stories15m\n  lora_rank: 4\n"
                 "  lora_attn_modules: [q_proj, v_proj]\ncheckpointer:\n  _component_: FullModelHFCheckpointer\n"
                 "  checkpoint_dir: null\ntokenizer:\n  _component_: x\n  path: old.model\nbatch_size: 1\n",
                 {}, {});
    tb::ui::RunSetupPanel panel(&doc);
    QString error;
    QVERIFY2(panel.openModelFolder(dir.path(), &error), qPrintable(error));
    QCOMPARE(doc.scalar("model._component_"), QString("tunebench.models.lora_from_hf_config"));
    QCOMPARE(doc.scalar("model.path"), QDir(dir.path()).absolutePath());
    QCOMPARE(doc.scalar("model.lora_rank"), QString("4"));  // LoRA settings stay
    QCOMPARE(doc.scalar("checkpointer.checkpoint_dir"), QDir(dir.path()).absolutePath());
    QCOMPARE(doc.value("checkpointer.checkpoint_files").size(), size_t(2));
    QCOMPARE(doc.scalar("checkpointer.model_type"), QString("LLAMA2"));
    QCOMPARE(doc.scalar("tokenizer.path"), dir.filePath("tokenizer.model"));
    QVERIFY2(panel.modelInfoText().startsWith("Llama · dim 4096 · 32 layers"), qPrintable(panel.modelInfoText()));
    QVERIFY2(panel.memoryText().contains("Parameters: 6.74 B"), qPrintable(panel.memoryText()));
    // LoRA rank 4 on q, v of 32 layers: 32 * 4 * (4096+4096) * 2 = 2,097,152 adapters.
    QVERIFY2(panel.memoryText().contains("LoRA adapters: 2.1 M"), qPrintable(panel.memoryText()));
  }

  // Each family's folder is recognised: its name, shape and features, the memory estimate (Phi-3's fused
  // projections adapted as one module each, as the LoRA builders adapt them); a refusal says why.
  void openModelFolderRecognisesTheFamily() {
    QTemporaryDir dir;
    writeFile(dir.filePath("model.safetensors"), kEmptySafetensors);
    tb::ui::ConfigDocument doc;
    doc.loadText("model:\n  _component_: tunebench.models.lora_llama2_stories15m\n  lora_rank: 8\n"
                 "  lora_attn_modules: [q_proj, v_proj]\n  apply_lora_to_mlp: true\ncheckpointer:\n"
                 "  _component_: FullModelHFCheckpointer\n  checkpoint_dir: null\nbatch_size: 1\n",
                 {}, {});
    tb::ui::RunSetupPanel panel(&doc);
    QString error;
    // Gemma 3 1B's config.json, abridged to what shapes the model.
    writeFile(dir.filePath("config.json"), R"({"model_type":"gemma3_text","hidden_size":1152,"intermediate_size":6912,
      "num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"num_hidden_layers":26,"vocab_size":262144,
      "max_position_embeddings":32768,"query_pre_attn_scalar":256,"sliding_window":512,"sliding_window_pattern":6,
      "rope_theta":1000000.0,"rope_local_base_freq":10000.0,"rms_norm_eps":1e-6,"hidden_activation":"gelu_pytorch_tanh"})");
    QVERIFY2(panel.openModelFolder(dir.path(), &error), qPrintable(error));
    QCOMPARE(doc.scalar("checkpointer.model_type"), QString("GEMMA3"));
    const QString gemma = panel.modelInfoText();
    QVERIFY2(gemma.startsWith("Gemma 3 · dim 1152 · 26 layers · 4 heads (1 kv) · head_dim 256"), qPrintable(gemma));
    QVERIFY2(gemma.contains("tied embeddings") && gemma.contains("sliding window 512 on 22 of 26 layers") &&
                 gemma.contains("q/k norms"),
             qPrintable(gemma));
    QVERIFY2(panel.memoryText().contains("Parameters: 1000 M"), qPrintable(panel.memoryText()));  // 999,885,952

    // Phi-3-mini: fused qkv_proj and gate_up_proj.
    writeFile(dir.filePath("config.json"), R"({"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,
      "num_attention_heads":32,"num_key_value_heads":32,"num_hidden_layers":32,"vocab_size":32064,
      "max_position_embeddings":4096,"sliding_window":2047,"rope_theta":10000.0,"rms_norm_eps":1e-5,"hidden_act":"silu",
      "tie_word_embeddings":false})");
    QVERIFY2(panel.openModelFolder(dir.path(), &error), qPrintable(error));
    QCOMPARE(doc.scalar("checkpointer.model_type"), QString("PHI3_MINI"));
    QVERIFY2(panel.modelInfoText().startsWith("Phi-3/4 · dim 3072"), qPrintable(panel.modelInfoText()));
    // Rank 8 on q and v (so the whole qkv_proj) and the MLP, per layer: qkv 8*(3072 + 9216) + gate_up
    // 8*(3072 + 16384) + down 8*(8192 + 3072) = 98304 + 155648 + 90112 = 344064; x 32 layers = 11,010,048.
    QVERIFY2(panel.memoryText().contains("LoRA adapters: 11.0 M"), qPrintable(panel.memoryText()));

    // A mixture-of-experts folder is refused, naming the field.
    writeFile(dir.filePath("config.json"), R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":96,
      "num_attention_heads":4,"num_hidden_layers":2,"vocab_size":256,"num_experts":8})");
    QVERIFY(!panel.openModelFolder(dir.path(), &error));
    QVERIFY2(error.contains("num_experts"), qPrintable(error));
  }
};

TB_TEST(TestModelInfo)
#include "test_model_info.moc"
