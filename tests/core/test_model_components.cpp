// The registry entries of recipes/models and recipes/checkpoint: every name and alias exists, the
// builders give the architecture they promise, LoRA builders adapt exactly the targeted projections,
// and the checkpointer turns its config node into options.
#include <QtTest>

#include "test_main.h"

#include "components/builtin.h"

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "checkpoint/hf_checkpointer.h"
#include "config/registry.h"
#include "models/transformer.h"
#include "peft/lora_linear.h"

using tb::config::Registry;
using tb::models::TransformerDecoder;

class TestModelComponents : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;

 private Q_SLOTS:
  void everyNameIsRegistered_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("alias");
    const std::vector<std::pair<const char*, const char*>> presets = {
        {"torchtune.models.llama2.", "llama2_7b"},         {"torchtune.models.llama2.", "llama2_13b"},
        {"torchtune.models.llama3_2.", "llama3_2_1b"},     {"torchtune.models.llama3_1.", "llama3_1_8b"},
        {"torchtune.models.mistral.", "mistral_7b"},       {"tunebench.models.", "llama2_stories15m"},
        {"tunebench.models.", "llama2_stories110m"},       {"tunebench.models.", "llama_tiny_test"}};
    for (const auto& [prefix, name] : presets)
      for (const QString variant : {"", "lora_", "qlora_"}) {
        const QString alias = variant + name;
        QTest::newRow(qPrintable(alias)) << QString(prefix) + alias << alias;
      }
    QTest::newRow("llama2") << "torchtune.models.llama2.llama2" << "llama2";
    QTest::newRow("lora_llama2") << "torchtune.models.llama2.lora_llama2" << "lora_llama2";
    QTest::newRow("llama3") << "torchtune.models.llama3.llama3" << "llama3";
    QTest::newRow("lora_llama3") << "torchtune.models.llama3.lora_llama3" << "lora_llama3";
    QTest::newRow("from_hf_config") << "tunebench.models.from_hf_config" << "from_hf_config";
  }
  void everyNameIsRegistered() {
    QFETCH(QString, name);
    QFETCH(QString, alias);
    const auto* spec = tb::components::builtin().find(name.toStdString());
    QVERIFY2(spec, qPrintable(name));
    QCOMPARE(spec->kind, std::string("model"));
    QCOMPARE(tb::components::builtin().find(alias.toStdString()), spec);
  }

  void presetBuildsItsArchitecture() {
    auto model = tb::components::builtin().build<TransformerDecoder>(YAML::Load("_component_: llama_tiny_test"));
    QCOMPARE(model->args().embed_dim, int64_t(64));
    QCOMPARE(model->args().num_kv_heads, int64_t(2));
    QCOMPARE(model->args().vocab_size, int64_t(512));
    QCOMPARE(tb::models::count_parameters(*model), int64_t(139584));
  }

  void genericBuildersTakeTorchtuneArguments() {
    auto l2 = tb::components::builtin().build<TransformerDecoder>(YAML::Load(
        "{_component_: torchtune.models.llama2.llama2, vocab_size: 100, num_layers: 1, num_heads: 2, "
        "embed_dim: 32, max_seq_len: 64, norm_eps: 1.0e-6}"));
    QCOMPARE(l2->args().num_kv_heads, int64_t(2));       // defaults to num_heads
    QCOMPARE(l2->args().intermediate_dim, int64_t(256));  // 2/3 * 4 * 32 = 85 -> multiple of 256
    QCOMPARE(l2->args().norm_eps, 1e-6);
    QCOMPARE(l2->args().rope_base, 10000.0);
    auto l3 = tb::components::builtin().build<TransformerDecoder>(YAML::Load(
        "{_component_: llama3, vocab_size: 100, num_layers: 1, num_heads: 4, num_kv_heads: 1, embed_dim: 32, "
        "max_seq_len: 64, intermediate_dim: 48}"));
    QCOMPARE(l3->args().rope_base, 500000.0);
    QCOMPARE(l3->args().num_kv_heads, int64_t(1));
    QCOMPARE(l3->args().intermediate_dim, int64_t(48));
  }

  void loraBuildersPutLoRAAtTheTargetedProjections() {
    const auto* spec = tb::components::builtin().find("lora_llama2_7b");
    std::set<std::string> args;
    for (const auto& a : spec->args) args.insert(a.name);
    for (const char* n : {"lora_attn_modules", "apply_lora_to_mlp", "apply_lora_to_output", "lora_rank", "lora_alpha",
                          "lora_dropout", "quantize_base"})
      QVERIFY2(args.count(n), n);
    auto model = tb::components::builtin().build<TransformerDecoder>(
        YAML::Load("{_component_: qlora_llama_tiny_test, lora_attn_modules: [q_proj, v_proj], apply_lora_to_mlp: true, "
                   "lora_rank: 4}"));
    std::set<std::string> adapted;
    for (const auto& [name, lora] : tb::peft::lora_modules(*model)) {
      adapted.insert(name);
      QCOMPARE(lora->rank(), int64_t(4));
      QVERIFY(lora->quantize_base);  // qlora_: default quantize_base true
    }
    std::set<std::string> expected;
    for (int layer = 0; layer < 2; ++layer)
      for (const char* p : {"attn.q_proj", "attn.v_proj", "mlp.w1", "mlp.w2", "mlp.w3"})
        expected.insert("layers." + std::to_string(layer) + "." + p);
    QCOMPARE(adapted, expected);
    // A tied model has no output projection to adapt; DoRA is refused, not ignored.
    for (const char* bad : {"{_component_: lora_llama3_2_1b, lora_attn_modules: [q_proj], apply_lora_to_output: true}",
                            "{_component_: lora_llama_tiny_test, lora_attn_modules: [q_proj], use_dora: true}"}) {
      QVERIFY_EXCEPTION_THROWN(tb::components::builtin().build<TransformerDecoder>(YAML::Load(bad)), std::exception);
    }
  }

  void fromHfConfigReadsTheFolder() {
    auto model = tb::models::build_decoder(tb::models::llama_tiny_test_args());
    tb::checkpoint::HFCheckpointerOptions opts;
    opts.output_dir = dir_.path().toStdString();
    const auto folder = tb::checkpoint::FullModelHFCheckpointer(opts).save("ckpt", *model);
    YAML::Node node;
    node["_component_"] = "tunebench.models.from_hf_config";
    node["path"] = folder;
    auto built = tb::components::builtin().build<TransformerDecoder>(node);
    QVERIFY(built->args().differences(model->args()).empty());
  }

  void checkpointerFromConfig() {
    using Ptr = std::shared_ptr<tb::checkpoint::FullModelHFCheckpointer>;
    auto list = tb::components::builtin().build<Ptr>(YAML::Load(
        "{_component_: torchtune.training.FullModelHFCheckpointer, checkpoint_dir: models/in, "
        "checkpoint_files: [a.safetensors, b.safetensors], model_type: LLAMA3, output_dir: runs/out}"));
    QCOMPARE(*list->options().checkpoint_dir, std::string("models/in"));
    QCOMPARE(list->options().checkpoint_files, (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
    QCOMPARE(list->options().model_type, std::string("LLAMA3"));
    QCOMPARE(list->options().max_shard_bytes, tb::checkpoint::kDefaultMaxShardBytes);
    auto formatted = tb::components::builtin().build<Ptr>(YAML::Load(
        "{_component_: FullModelHFCheckpointer, checkpoint_dir: null, model_type: LLAMA2, output_dir: runs/out, "
        "checkpoint_files: {filename_format: 'model-{}-of-{}.safetensors', max_filename: '00003'}}"));
    QVERIFY(!formatted->has_checkpoint());
    QCOMPARE(formatted->options().checkpoint_files,
             (std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                       "model-00003-of-00003.safetensors"}));
    QVERIFY_THROWS_EXCEPTION(std::exception, tb::components::builtin().build<Ptr>(YAML::Load(
        "{_component_: FullModelHFCheckpointer, checkpoint_dir: null, model_type: LLAMA2, output_dir: runs/o, "
        "safe_serialization: false}")));
  }
};

TB_TEST(TestModelComponents)
#include "test_model_components.moc"
