// lora_finetune_single_device in torchtune's recipe-test style: the tiny reference checkpoint, fixed
// seed, 2 epochs x 2 steps; the losses are compared with PyTorch training the same adapter (read from
// the PEFT files we saved) on the same batches. Then the saved files: the PEFT adapter, the merged
// model (checked against W + alpha/r B A computed here in Hugging Face's layout), adapter-only saves,
// an exact resume, and QLoRA (NF4 base) training end to end.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <filesystem>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "components/builtin.h"
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

  tb::training::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides,
                               CollectingLogger& logger, tb::training::RunControl& control, bool qlora = false) {
    tbtest::TinyConfig config;
    config.lora(qlora ? "tunebench.models.qlora_from_hf_config" : "tunebench.models.lora_from_hf_config");
    config.from_folder(base_.toStdString(), config.model);
    config.as_train_reference("0.01");
    return tbtest::run_recipe(kRecipe, config.text(output_dir.toStdString()), overrides, logger, control);
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
    tb::training::RunControl init_control;
    const auto init = run(tmp_.filePath("init"), {"max_steps_per_epoch=0", "epochs=1"}, init_logger, init_control);
    QVERIFY2(init.status == tb::training::RunStatus::Completed, init.message.c_str());
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
    tb::training::RunControl control;
    const auto result = run(tmp_.filePath("trained"), {}, logger, control);
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
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
    tb::training::RunControl control;
    const auto r = run(tmp_.filePath("adapter_only"), {"save_adapter_weights_only=true", "epochs=1"}, logger, control);
    QVERIFY2(r.status == tb::training::RunStatus::Completed, r.message.c_str());
    std::set<std::string> files;
    for (const auto& e : fs::directory_iterator(tmp_.filePath("adapter_only/epoch_0").toStdString()))
      files.insert(e.path().filename().string());
    QVERIFY(files.count("adapter_model.safetensors") && files.count("adapter_config.json"));
    for (const auto& f : files) QVERIFY2(f.rfind("model", 0) != 0, f.c_str());
  }

  void stopThenResumeContinuesExactly() {
    CollectingLogger full;
    tb::training::RunControl full_control;
    run(tmp_.filePath("resume_full"), {}, full, full_control);
    QCOMPARE(full.steps.size(), size_t(4));

    const QString out = tmp_.filePath("resume_split");
    CollectingLogger first;
    tb::training::RunControl first_control;
    first.stop_after = 3;
    const auto stopped = run(out, {}, first, first_control);
    QCOMPARE(int(stopped.status), int(tb::training::RunStatus::Stopped));

    CollectingLogger second;
    tb::training::RunControl second_control;
    const auto resumed = run(out, {"resume_from_checkpoint=true"}, second, second_control);
    QVERIFY2(resumed.status == tb::training::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(1));
    QCOMPARE(second.steps[0].step, int64_t(4));
    QCOMPARE(second.steps[0].loss, full.steps[3].loss);  // bitwise: base from the original, adapter resumed
  }

  // A LoRA run on seeded random base weights (checkpoint_dir: null) with `seed: null`: the resumed run
  // must rebuild the same base, so it takes the seed the checkpoint recorded.
  void resumeOfANullSeedRunRebuildsItsRandomBase() {
    const std::vector<std::string> random_base = {"seed=null", "checkpointer.checkpoint_dir=null"};
    CollectingLogger full;
    tb::training::RunControl full_control;
    const QString out = tmp_.filePath("null_seed_full");
    const auto whole = run(out, random_base, full, full_control);
    QVERIFY2(whole.status == tb::training::RunStatus::Completed, whole.message.c_str());
    QCOMPARE(full.steps.size(), size_t(4));

    CollectingLogger second;
    tb::training::RunControl second_control;
    auto resume = random_base;
    resume.push_back("resume_from_checkpoint=true");
    resume.push_back("checkpointer.checkpoint_dir=" + (out + "/epoch_0").toStdString());
    const auto resumed = run(tmp_.filePath("null_seed_resumed"), resume, second, second_control);
    QVERIFY2(resumed.status == tb::training::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(2));
    QCOMPARE(second.steps[0].loss, full.steps[2].loss);  // bitwise: the same random base and adapter
    QCOMPARE(second.steps[1].loss, full.steps[3].loss);
  }

  void qloraTrainsOnNF4Base() {
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto r = run(tmp_.filePath("qlora"), {}, logger, control, /*qlora=*/true);
    QVERIFY2(r.status == tb::training::RunStatus::Completed, r.message.c_str());
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

TB_TEST(TestLoraFinetune)
#include "test_lora_finetune.moc"
