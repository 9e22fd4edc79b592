// lora_finetune_single_device in torchtune's recipe-test style: the tiny reference checkpoint, fixed
// seed, 2 epochs x 2 steps; the losses are compared with PyTorch training the same adapter (read from
// the PEFT files we saved) on the same batches. Then the saved files: the PEFT adapter, the merged
// model (checked against W + alpha/r B A computed here in Hugging Face's layout), adapter-only saves,
// an exact resume, and QLoRA (NF4 base) training end to end.
#include <QtTest>

#include <cmath>
#include <filesystem>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "config/config.h"
#include "recipe.h"
#include "recipe_test_support.h"
#include "test_support.h"
#include "training/run_checkpoint.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kRecipe = "lora_finetune_single_device";

using tbtest::CollectingLogger;

}  // namespace

class TestLoraFinetune : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString base_;

  std::string configText(const QString& output_dir, bool qlora) const {
    return "model:\n  _component_: tunebench.models." + std::string(qlora ? "qlora" : "lora") +
           "_from_hf_config\n  path: " + base_.toStdString() +
           "\n  lora_attn_modules: [q_proj, k_proj, v_proj, output_proj]\n  apply_lora_to_mlp: true\n"
           "  lora_rank: 4\n  lora_alpha: 8\n"
           "tokenizer:\n  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: " TB_SOURCE_DIR
           "/resources/tokenizer/tokenizer.model\n"
           "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: " +
           base_.toStdString() +
           "\n  checkpoint_files: [model.safetensors]\n  model_type: LLAMA2\n  output_dir: ${output_dir}\n"
           "dataset:\n  _component_: tunebench.datasets.synthetic\n  seq_len: 12\n  num_samples: 8\n  seed: 0\n"
           "seed: 0\nshuffle: false\nbatch_size: 2\nepochs: 2\nmax_steps_per_epoch: 2\n"
           "optimizer:\n  _component_: torch.optim.AdamW\n  lr: 0.01\n  weight_decay: 0.01\n"
           "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n  num_output_chunks: 3\n"
           "num_threads: 1\ndtype: fp32\nlog_every_n_steps: 1\n"
           "output_dir: " +
           output_dir.toStdString() + "\n";
  }

  tb::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides, CollectingLogger& logger,
                    tb::RunControl& control, bool qlora = false) {
    tb::config::LoadOptions options;
    options.overrides = overrides;
    options.recipe = kRecipe;
    auto loaded = tb::config::load_text(configText(output_dir, qlora), "test.yaml", options);
    if (!loaded.ok()) {
      tb::RunResult invalid;
      invalid.status = tb::RunStatus::Failed;
      invalid.message = tb::config::format_diagnostics(loaded.diagnostics);
      return invalid;
    }
    logger.control = &control;
    return tb::find_recipe(kRecipe)->run(*loaded.config, logger, control);
  }

  static std::map<std::string, torch::Tensor> read(const QString& file) {
    return tb::checkpoint::load_safetensors(file.toStdString());
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY(tb::find_recipe(kRecipe));
    const auto made = tbtest::run_reference("hf_llama_reference.py", {"make", tmp_.filePath("ref")});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    base_ = tmp_.filePath("ref/fp32_gqa");
  }

  void lossesMatchPyTorchReference() {
    // The adapter at initialisation, saved by a zero-step run, is the reference's starting point.
    CollectingLogger init_logger;
    tb::RunControl init_control;
    const auto init = run(tmp_.filePath("init"), {"max_steps_per_epoch=0", "epochs=1"}, init_logger, init_control);
    QVERIFY2(init.status == tb::RunStatus::Completed, init.message.c_str());
    const QString adapter = tmp_.filePath("init/epoch_0");
    QVERIFY(fs::exists((adapter + "/adapter_model.safetensors").toStdString()));
    QVERIFY2(!init_logger.info_containing("memory: frozen weights").empty(), "no memory line before training");

    const nlohmann::json params = {{"epochs", 2},      {"steps", 2},  {"batch_size", 2},    {"grad_accum", 1},
                                   {"seq_len", 12},    {"num_samples", 8}, {"seed", 0},     {"lr", 0.01},
                                   {"weight_decay", 0.01}, {"clip", 0}, {"adapter", adapter.toStdString()}};
    const auto reference =
        tbtest::run_reference("train_reference.py", {base_, QString::fromStdString(params.dump())});
    QVERIFY2(reference.code == 0, qPrintable(reference.err));
    const auto expected =
        nlohmann::json::parse(tbtest::last_line(reference.out).toStdString())["losses"].get<std::vector<double>>();

    CollectingLogger logger;
    tb::RunControl control;
    const auto result = run(tmp_.filePath("trained"), {}, logger, control);
    QVERIFY2(result.status == tb::RunStatus::Completed, result.message.c_str());
    const auto got = logger.losses();
    QCOMPARE(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - expected[i]) <= 1e-4 * std::abs(expected[i]),
               qPrintable(QString("step %1: ours %2, reference %3").arg(i + 1).arg(got[i], 0, 'g', 10).arg(expected[i], 0, 'g', 10)));
    QVERIFY(got.back() < got.front());
  }

  void mergedModelIsBasePlusScaledBA() {
    const QString ckpt = tmp_.filePath("trained/epoch_1");
    QVERIFY(tb::training::read_manifest(ckpt.toStdString()).has_value());
    const auto base = read(base_ + "/model.safetensors");
    const auto merged = tb::checkpoint::load_hf_state(ckpt.toStdString(), {});
    const auto adapter = read(ckpt + "/adapter_model.safetensors");
    QCOMPARE(merged.size(), base.size());
    int adapted = 0;
    for (const auto& [name, w] : base) {
      QVERIFY2(merged.count(name), name.c_str());
      // PEFT names: base_model.model.<HF module>.lora_A.weight; the update is in HF's layout already.
      const std::string module = name.substr(0, name.size() - std::string(".weight").size());
      const auto a = adapter.find("base_model.model." + module + ".lora_A.weight");
      if (a == adapter.end()) {
        QVERIFY2(torch::equal(merged.at(name), w), name.c_str());  // frozen and not adapted: bitwise the base
        continue;
      }
      const auto& b = adapter.at("base_model.model." + module + ".lora_B.weight");
      const auto want = w + (8.0 / 4.0) * b.matmul(a->second);
      QVERIFY2(torch::allclose(merged.at(name), want, 1e-5, 1e-6), name.c_str());
      QVERIFY2(!torch::equal(merged.at(name), w), name.c_str());  // training moved it
      ++adapted;
    }
    QCOMPARE(adapted, 2 * 7);  // q, k, v, o, gate, down, up in each of the 2 layers
  }

  void adapterOnlySavesNoModelFiles() {
    CollectingLogger logger;
    tb::RunControl control;
    const auto r = run(tmp_.filePath("adapter_only"), {"save_adapter_weights_only=true", "epochs=1"}, logger, control);
    QVERIFY2(r.status == tb::RunStatus::Completed, r.message.c_str());
    std::set<std::string> files;
    for (const auto& e : fs::directory_iterator(tmp_.filePath("adapter_only/epoch_0").toStdString()))
      files.insert(e.path().filename().string());
    QVERIFY(files.count("adapter_model.safetensors") && files.count("adapter_config.json"));
    for (const auto& f : files) QVERIFY2(f.rfind("model", 0) != 0, f.c_str());
  }

  void stopThenResumeContinuesExactly() {
    CollectingLogger full;
    tb::RunControl full_control;
    run(tmp_.filePath("resume_full"), {}, full, full_control);
    QCOMPARE(full.steps.size(), size_t(4));

    const QString out = tmp_.filePath("resume_split");
    CollectingLogger first;
    tb::RunControl first_control;
    first.stop_after = 3;
    const auto stopped = run(out, {}, first, first_control);
    QCOMPARE(int(stopped.status), int(tb::RunStatus::Stopped));

    CollectingLogger second;
    tb::RunControl second_control;
    const auto resumed = run(out, {"resume_from_checkpoint=true"}, second, second_control);
    QVERIFY2(resumed.status == tb::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(1));
    QCOMPARE(second.steps[0].step, int64_t(4));
    QCOMPARE(second.steps[0].loss, full.steps[3].loss);  // bitwise: base from the original, adapter resumed
  }

  void qloraTrainsOnNF4Base() {
    CollectingLogger logger;
    tb::RunControl control;
    const auto r = run(tmp_.filePath("qlora"), {}, logger, control, /*qlora=*/true);
    QVERIFY2(r.status == tb::RunStatus::Completed, r.message.c_str());
    QVERIFY2(!logger.info_containing("in NF4").empty(), "the memory line does not count NF4 weights");
    QVERIFY(!logger.info_containing("base weights stored in NF4").empty());
    const auto got = logger.losses();
    QCOMPARE(got.size(), size_t(4));
    for (double l : got) QVERIFY(std::isfinite(l));
    QVERIFY(got.back() < got.front());
    // The merged save dequantises: close to the base (NF4 error), not equal, and loadable.
    const auto base = read(base_ + "/model.safetensors");
    const auto merged = tb::checkpoint::load_hf_state(tmp_.filePath("qlora/epoch_1").toStdString(), {});
    const auto& name = "model.layers.0.self_attn.v_proj.weight";
    const auto diff = (merged.at(name) - base.at(name)).abs().max().item<double>();
    QVERIFY2(diff > 0 && diff < 0.5 * base.at(name).abs().max().item<double>(), qPrintable(QString::number(diff)));
  }
};

QTEST_GUILESS_MAIN(TestLoraFinetune)
#include "test_lora_finetune.moc"
