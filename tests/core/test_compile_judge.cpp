// The compile warm-up's judge on a model of Llama 3.2 1B's width (dim 2048, 32 heads on 8 kv heads,
// hidden 8192, vocab 128256; 2 of its 16 layers, so that a test takes a minute), in bf16, run as a user
// runs it (tunebench-cli run, compile: true). In bf16 eager is itself some way from the exact step, so
// the fused step is judged against the step computed in fp32 on the same weights, with eager's own error
// as the yardstick: a correct fused step passes; a kernel made wrong (TUNEBENCH_COMPILE_PLANT_ERROR) does
// not, and that kernel alone goes back to eager.
#include <QtTest>

#include "test_main.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "compile/compiled_decoder.h"
#include "recipe_test_support.h"

namespace {

// Llama 3.2 1B's config.json with 2 layers: random weights (checkpoint_dir null).
void write_1b_width_folder(const QString& dir) {
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
                                 {"hidden_size", 2048},  {"intermediate_size", 8192},
                                 {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                                 {"num_hidden_layers", 2}, {"vocab_size", 128256},
                                 {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0},
                                 {"max_position_embeddings", 2048}, {"tie_word_embeddings", true}};
  std::ofstream((dir + "/config.json").toStdString()) << config.dump(2);
}

nlohmann::json compile_event(const QString& output_dir) {
  std::ifstream in((output_dir + "/logs/metrics.jsonl").toStdString());
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "compile") return j;
  }
  return {};
}

}  // namespace

class TestCompileJudge : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString cli_;

  // One bf16 step (LoRA, else full), compiled, on 1 x 256 synthetic tokens; returns the run's compile event.
  nlohmann::json compiled_step(const QString& name, const QByteArray& planted_error, bool lora = true) {
    tbtest::TinyConfig c;
    if (lora) c.lora("tunebench.models.lora_from_hf_config");
    else c.model = "tunebench.models.from_hf_config";
    c.model_args = "  path: " + dir_.filePath("model").toStdString() + "\n" + c.model_args;
    c.seq_len = 256, c.num_samples = 2, c.batch_size = 1, c.epochs = 1, c.max_steps_per_epoch = 1;
    c.gradient_accumulation_steps = 1;
    c.extra = "compile: true\n";
    std::string text = c.text(dir_.filePath(name).toStdString());
    text.replace(text.find("dtype: fp32"), 11, "dtype: bf16");
    const QString config = dir_.filePath(name + ".yaml");
    std::ofstream(config.toStdString()) << text;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CACHE_HOME", dir_.filePath("cache"));  // the second run reuses the first one's plan
    if (!planted_error.isEmpty()) env.insert("TUNEBENCH_COMPILE_PLANT_ERROR", planted_error);
    p.setProcessEnvironment(env);
    p.start(cli_, {"run", lora ? "lora_finetune_single_device" : "full_finetune_single_device", "--config", config});
    if (!p.waitForFinished(600000) || p.exitCode() != 0) {
      qWarning("%s", p.readAllStandardError().constData());
      return {};
    }
    return compile_event(dir_.filePath(name));
  }

 private Q_SLOTS:
  void initTestCase() {
    cli_ = qEnvironmentVariable("TB_CLI");
    QVERIFY2(QFileInfo(cli_).isExecutable(), "TB_CLI must name the tunebench-cli binary");
    QVERIFY(QDir(dir_.path()).mkpath("model"));
    write_1b_width_folder(dir_.filePath("model"));
  }

  void aCorrectFusedBf16StepIsAccepted_data() {
    QTest::addColumn<bool>("lora");
    QTest::newRow("LoRA") << true;
    QTest::newRow("full") << false;
  }
  void aCorrectFusedBf16StepIsAccepted() {
    QFETCH(bool, lora);
    const auto event = compiled_step(lora ? "correct-lora" : "correct-full", {}, lora);
    QVERIFY2(event.is_object(), "the run logged no compile event");
    qInfo("%s", event.dump().c_str());
    QVERIFY2(event.value("fallback", true) == false, event.dump().c_str());
    // Both errors are said, for the loss and each group that trains (the LoRA adapters of attention and MLP).
    const auto& errors = event["error_vs_fp32"];
    QVERIFY(errors["loss"].contains("eager") && errors["loss"].contains("compiled"));
    for (const char* group : {"attention", "mlp"}) {
      const std::string name = lora ? std::string(group) + " (LoRA)" : group;
      QVERIFY2(errors["groups"].contains(name), errors.dump().c_str());
    }
    if (!lora) QVERIFY2(errors["groups"].contains("embeddings") && errors["groups"].contains("norms"), errors.dump().c_str());
    for (const auto& [group, e] : errors["groups"].items()) {
      // eager bf16 is measurably away from fp32 at this width: the yardstick is not zero.
      QVERIFY2(e["eager"].get<double>() > 1e-4, (group + ": " + e.dump()).c_str());
      QVERIFY2(e["compiled"].get<double>() <= tb::compile::kErrorBound, (group + ": " + e.dump()).c_str());
    }
  }

  // The fused attention's output 5% wrong: the judge sees it in the gradients; the warm-up finds the
  // kernel (the step passes with attention as eager ops) and only that piece leaves the fused step.
  void aWrongKernelRunsEagerAndTheRestStaysFused() {
    const auto event = compiled_step("planted", "0.05");
    QVERIFY2(event.is_object(), "the run logged no compile event");
    qInfo("%s", event.dump().c_str());
    QVERIFY2(event.value("fallback", true) == false, event.dump().c_str());
    QCOMPARE(event["plan"].value("eager_kernels", nlohmann::json::array()), nlohmann::json({"attention"}));
    bool said = false;
    for (const auto& piece : event["eager_pieces"])
      said = said || piece.get<std::string>().rfind("attention (its fused kernel failed the check: ", 0) == 0;
    QVERIFY2(said, event["eager_pieces"].dump().c_str());
    // With attention eager, the step is as close to fp32 as a correct one.
    for (const auto& [group, e] : event["error_vs_fp32"]["groups"].items())
      QVERIFY2(e["compiled"].get<double>() <= tb::compile::kErrorFactor * e["eager"].get<double>(), (group + ": " + e.dump()).c_str());
  }
};

TB_TEST(TestCompileJudge)
#include "test_compile_judge.moc"
