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

using tb::ui::RecipeKind;

namespace {
// The published Llama-2-7b-hf config.json, abridged to the fields that shape the model.
const char* kLlama2_7b = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
  "intermediate_size":11008,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,
  "vocab_size":32000,"max_position_embeddings":4096,"rms_norm_eps":1e-05,"tie_word_embeddings":false})";

// dim 64, 2 layers, 4 heads (head_dim 16), 2 kv heads (kv dim 32), hidden 128, vocab 512, untied.
tb::models::ModelArgs tiny() {
  tb::models::ModelArgs a;
  a.vocab_size = 512;
  a.num_layers = 2;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.embed_dim = 64;
  a.intermediate_dim = 128;
  a.max_seq_len = 128;
  a.tie_word_embeddings = false;
  return a;
}
// By hand: per layer q 64*64 + k 64*32 + v 64*32 + o 64*64 = 12288, mlp 3*64*128 = 24576, two norms 128
// -> 36992; x2 layers = 73984; embedding 32768 + output 32768 + final norm 64.
constexpr int64_t kTinyParams = 139584;

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

  void estimatesFullFineTune() {
    QCOMPARE(tiny().parameter_count(), kTinyParams);
    const auto e = tb::ui::estimateMemory(tiny(), RecipeKind::Full, "fp32", {}, 1, 16);
    QCOMPARE(e.totalParams, kTinyParams);
    QCOMPARE(e.trainableParams, kTinyParams);
    QCOMPARE(e.weightBytes, 4.0 * kTinyParams);
    QCOMPARE(e.gradientBytes, 4.0 * kTinyParams);
    QCOMPARE(e.optimizerBytes, 8.0 * kTinyParams);  // AdamW: exp_avg and exp_avg_sq
    const auto bf16 = tb::ui::estimateMemory(tiny(), RecipeKind::Full, "bf16", {}, 1, 16);
    QCOMPARE(bf16.weightBytes + bf16.gradientBytes + bf16.optimizerBytes, 8.0 * kTinyParams);
    // optimizer_in_bwd: one gradient at a time, the largest (the 512 x 64 embedding).
    tb::ui::ConfigDocument doc;
    doc.loadText("optimizer_in_bwd: True\n", {}, {});
    QVERIFY(tb::ui::optimizerStatesOf(doc).inBackward);
    const auto in_bwd = tb::ui::estimateMemory(tiny(), RecipeKind::Full, "fp32", {}, 1, 16, tb::ui::optimizerStatesOf(doc));
    QCOMPARE(in_bwd.gradientBytes, 4.0 * 512 * 64);
    QVERIFY2(in_bwd.describe().contains("one at a time"), qPrintable(in_bwd.describe()));
  }

  // 8-bit AdamW (training/adamw8bit.h): a byte per moment and element and two fp32 absmax per block of
  // 256 for tensors of at least min_8bit_size elements, fp32 moments below, whatever the weights' dtype.
  void estimatesEightBitAdamW() {
    // >= 4096: embedding and output 32768 each, per layer q and o 4096, w1 w2 w3 8192 -> 131072 elements
    // in 512 blocks; below: k and v 2048 per layer and five norms of 64 -> 8512 elements.
    const double expected = 2.0 * 131072 + 8.0 * 512 + 8.0 * 8512;
    for (const QString dtype : {"fp32", "bf16"}) {
      const auto e = tb::ui::estimateMemory(tiny(), RecipeKind::Full, dtype, {}, 1, 16, {true, 4096});
      QCOMPARE(e.optimizerBytes, expected);
      QVERIFY2(e.describe().contains("8-bit AdamW"), qPrintable(e.describe()));
    }
    QCOMPARE(tb::ui::estimateMemory(tiny(), RecipeKind::Full, "fp32", {}, 1, 16, {true, 0}).optimizerBytes,
             2.0 * kTinyParams + 8.0 * (2 * 128 + 2 * (16 + 8 + 8 + 16 + 3 * 32 + 1 + 1) + 1));
    tb::ui::ConfigDocument doc;
    doc.loadText("optimizer:\n  _component_: bitsandbytes.optim.PagedAdamW8bit\n  lr: 2e-5\n", {}, {});
    QVERIFY(tb::ui::optimizerStatesOf(doc).eightBit);
    QCOMPARE(tb::ui::optimizerStatesOf(doc).min8bitSize, int64_t(4096));
    doc.setScalar("optimizer._component_", "bitsandbytes.optim.PagedAdamW");
    QVERIFY(!tb::ui::optimizerStatesOf(doc).eightBit);  // 32-bit unless optim_bits: 8
    doc.setScalar("optimizer.optim_bits", "8");
    doc.setScalar("optimizer.min_8bit_size", "16");
    QVERIFY(tb::ui::optimizerStatesOf(doc).eightBit);
    QCOMPARE(tb::ui::optimizerStatesOf(doc).min8bitSize, int64_t(16));
  }

  void estimatesLoraAndQlora() {
    tb::ui::LoraTargets t;
    t.attnModules = {"q_proj", "v_proj"};
    t.mlp = true;
    t.rank = 8;
    // Adapters per layer: q 8*(64+64) + v 8*(64+32) + w1 8*(64+128) + w2 8*(128+64) + w3 8*(64+128) = 6400.
    const int64_t adapters = 2 * 6400;
    const auto lora = tb::ui::estimateMemory(tiny(), RecipeKind::Lora, "fp32", t, 1, 16);
    QCOMPARE(lora.adapterParams, adapters);
    QCOMPARE(lora.trainableParams, adapters);
    QCOMPARE(lora.weightBytes, 4.0 * (kTinyParams + adapters));
    QCOMPARE(lora.gradientBytes, 4.0 * adapters);
    QCOMPARE(lora.optimizerBytes, 8.0 * adapters);
    // QLoRA: the targeted base linears (q 4096 + v 2048 + mlp 24576 per layer) in NF4.
    const int64_t quantized = 2 * (4096 + 2048 + 24576);
    const auto q = tb::ui::estimateMemory(tiny(), RecipeKind::Qlora, "bf16", t, 1, 16);
    QCOMPARE(q.quantizedParams, quantized);
    const double nf4 = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
    QCOMPARE(q.weightBytes, quantized * nf4 + 2.0 * (kTinyParams - quantized) + 2.0 * adapters);
    QCOMPARE(q.gradientBytes, 2.0 * adapters);
    QVERIFY(q.weightBytes < lora.weightBytes / 2);
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
