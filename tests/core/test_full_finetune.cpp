// full_finetune_single_device in torchtune's recipe-test style: a tiny Hugging Face checkpoint made
// by an independent program, fixed seed, 2 epochs x 2 steps, losses compared with PyTorch's own
// training of the same weights on the same batches; then resume, stop, NaN and checkpoint round trips.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "config/config.h"
#include "config/registry.h"
#include "models/transformer.h"
#include "recipe.h"
#include "recipe_test_support.h"
#include "training/recipe_support.h"
#include "training/run_checkpoint.h"

namespace fs = std::filesystem;

namespace {

using tbtest::CollectingLogger;

QString runPython(const QStringList& args) {
  QProcess p;
  p.start(TB_PYTHON, args);
  if (!p.waitForFinished(300000) || p.exitCode() != 0) return {};
  return QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n').last();
}

}  // namespace

class TestFullFinetune : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString base_;  // the reference checkpoint folder

  std::string configText(const QString& output_dir) const {
    return "model:\n  _component_: tunebench.models.from_hf_config\n  path: " + base_.toStdString() +
           "\n"
           "tokenizer:\n  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: " TB_SOURCE_DIR
           "/resources/tokenizer/tokenizer.model\n"
           "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: " +
           base_.toStdString() +
           "\n  checkpoint_files: [model.safetensors]\n  model_type: LLAMA2\n  output_dir: ${output_dir}\n"
           "dataset:\n  _component_: tunebench.datasets.synthetic\n  seq_len: 12\n  num_samples: 8\n  seed: 0\n"
           "seed: 0\nshuffle: false\nbatch_size: 2\nepochs: 2\nmax_steps_per_epoch: 2\n"
           "gradient_accumulation_steps: 1\n"
           "optimizer:\n  _component_: torch.optim.AdamW\n  lr: 0.001\n  weight_decay: 0.01\n"
           "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n  num_output_chunks: 3\n"
           "num_threads: 1\ndtype: fp32\nlog_every_n_steps: 1\n"
           "output_dir: " +
           output_dir.toStdString() + "\n";
  }

  tb::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides, CollectingLogger& logger,
                    tb::RunControl& control) {
    tb::config::LoadOptions options;
    options.overrides = overrides;
    options.recipe = "full_finetune_single_device";
    auto loaded = tb::config::load_text(configText(output_dir), "test.yaml", options);
    if (!loaded.ok()) {
      qWarning("%s", tb::config::format_diagnostics(loaded.diagnostics).c_str());
      return {tb::RunStatus::Failed, "config invalid", 0, 0, {}};
    }
    logger.control = &control;
    return tb::find_recipe("full_finetune_single_device")->run(*loaded.config, logger, control);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY2(QString(TB_PYTHON).size() > 0, "python3 with python3-torch is needed for the reference (scripts/setup.sh installs it)");
    const QString script = TB_SOURCE_DIR "/tests/reference/hf_llama_reference.py";
    QVERIFY2(!runPython({script, "make", tmp_.filePath("ref")}).isEmpty(), "the reference checkpoint script failed");
    base_ = tmp_.filePath("ref/fp32_gqa");
  }

  void lossesMatchPyTorchReference() {
    const QString script = TB_SOURCE_DIR "/tests/reference/train_reference.py";
    const QString out = runPython({script, base_,
                                   R"({"epochs":2,"steps":2,"batch_size":2,"grad_accum":1,"seq_len":12,)"
                                   R"("num_samples":8,"seed":0,"lr":0.001,"weight_decay":0.01,"clip":0})"});
    QVERIFY2(!out.isEmpty(), "the reference training script failed");
    const auto expected = nlohmann::json::parse(out.toStdString())["losses"].get<std::vector<double>>();
    CollectingLogger logger;
    tb::RunControl control;
    const auto result = run(tmp_.filePath("run_ref"), {}, logger, control);
    QVERIFY2(result.status == tb::RunStatus::Completed, result.message.c_str());
    const auto got = logger.losses();
    QCOMPARE(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - expected[i]) <= 1e-4 * std::abs(expected[i]),
               qPrintable(QString("step %1: ours %2, reference %3").arg(i + 1).arg(got[i], 0, 'g', 10).arg(expected[i], 0, 'g', 10)));
    // Training moved the weights, and every epoch left a complete checkpoint.
    QVERIFY(got.back() < got.front());
    QVERIFY(tb::training::read_manifest(tmp_.filePath("run_ref/epoch_0").toStdString()).has_value());
    QVERIFY(tb::training::read_manifest(tmp_.filePath("run_ref/epoch_1").toStdString()).has_value());
  }

  void sameSeedSameLossesWithAccumulation() {
    CollectingLogger a, b;
    tb::RunControl ca, cb;
    run(tmp_.filePath("accum_a"), {"gradient_accumulation_steps=2", "epochs=1"}, a, ca);
    run(tmp_.filePath("accum_b"), {"gradient_accumulation_steps=2", "epochs=1"}, b, cb);
    QCOMPARE(a.losses().size(), size_t(2));
    QCOMPARE(a.losses(), b.losses());
    QCOMPARE(a.steps[0].tokens, int64_t(2 * 2 * 11));  // two micro-batches of 2 x 11 predicted tokens
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
    QCOMPARE(first.events.back()["status"].get<std::string>(), std::string("stopped"));
    QVERIFY(tb::training::read_manifest((out + "/step_3").toStdString()).has_value());

    CollectingLogger second;
    tb::RunControl second_control;
    const auto resumed = run(out, {"resume_from_checkpoint=true"}, second, second_control);
    QVERIFY2(resumed.status == tb::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(1));
    QCOMPARE(second.steps[0].step, int64_t(4));
    QVERIFY(second.steps[0].resumed_before);
    QCOMPARE(second.steps[0].loss, full.steps[3].loss);  // bitwise: the run continues exactly
  }

  void zeroStepsSavesTheWeightsUnchanged() {
    // The seed's round trip: max_steps_per_epoch=0 epochs=1 saves a checkpoint that loads back.
    const QString out = tmp_.filePath("zero");
    CollectingLogger logger;
    tb::RunControl control;
    const auto result = run(out, {"max_steps_per_epoch=0", "epochs=1"}, logger, control);
    QVERIFY2(result.status == tb::RunStatus::Completed, result.message.c_str());
    QVERIFY(logger.steps.empty());
    auto original = tb::checkpoint::load_hf_state(base_.toStdString(), {"model.safetensors"});
    auto saved = tb::checkpoint::load_hf_state((out + "/epoch_0").toStdString(), {});
    QCOMPARE(saved.size(), original.size());
    for (const auto& [name, tensor] : original) {
      QVERIFY2(saved.count(name), name.c_str());
      QVERIFY2(torch::equal(saved.at(name), tensor), name.c_str());
    }
    // ... and a second run starts from it.
    CollectingLogger again;
    tb::RunControl again_control;
    const auto second = run(tmp_.filePath("zero_again"),
                            {"checkpointer.checkpoint_dir=" + (out + "/epoch_0").toStdString(),
                             "checkpointer.checkpoint_files=[model-00001-of-00001.safetensors]", "epochs=1"},
                            again, again_control);
    QVERIFY2(second.status == tb::RunStatus::Completed, second.message.c_str());
    QCOMPARE(again.steps.size(), size_t(2));
  }

  void relativeOutputDirHoldsTheModelFiles() {
    // The bundled configs name output_dir relative to where the run starts.
    const QString cwd = QDir::currentPath();
    QVERIFY(QDir::setCurrent(tmp_.path()));
    CollectingLogger logger;
    tb::RunControl control;
    const auto r = run("relative_out", {"max_steps_per_epoch=0", "epochs=1"}, logger, control);
    QDir::setCurrent(cwd);
    QVERIFY2(r.status == tb::RunStatus::Completed, r.message.c_str());
    for (const char* file : {"config.json", "model.safetensors.index.json", "model-00001-of-00001.safetensors",
                             "recipe_state.json", "tunebench_checkpoint.json"})
      QVERIFY2(fs::exists(tmp_.filePath(QString("relative_out/epoch_0/") + file).toStdString()), file);
  }

  void nanLossFailsAndKeepsCheckpoints() {
    // A first run leaves complete checkpoints in the output folder.
    const QString out = tmp_.filePath("diverge");
    CollectingLogger good;
    tb::RunControl good_control;
    const auto first = run(out, {"save_every_n_steps=1", "epochs=1"}, good, good_control);
    QVERIFY2(first.status == tb::RunStatus::Completed, first.message.c_str());
    const auto before = tb::training::list_checkpoints(out.toStdString());
    QVERIFY(before.size() >= 2);

    // The same base with one NaN weight: the very first loss is NaN, whatever the optimizer does.
    const QString poisoned = tmp_.filePath("poisoned");
    fs::create_directories(poisoned.toStdString());
    fs::copy_file((base_ + "/config.json").toStdString(), (poisoned + "/config.json").toStdString());
    auto weights = tb::checkpoint::load_safetensors((base_ + "/model.safetensors").toStdString());
    auto norm = weights.at("model.norm.weight").clone();
    norm[0] = std::nan("");
    weights["model.norm.weight"] = norm;
    tb::checkpoint::save_safetensors((poisoned + "/model.safetensors").toStdString(), weights);

    CollectingLogger logger;
    tb::RunControl control;
    const auto result = run(out, {"save_every_n_steps=1", "epochs=1", "model.path=" + poisoned.toStdString(),
                                  "checkpointer.checkpoint_dir=" + poisoned.toStdString()},
                            logger, control);
    QCOMPARE(int(result.status), int(tb::RunStatus::Failed));
    QVERIFY2(QString::fromStdString(result.message).contains("loss is nan at step 1"), result.message.c_str());
    QCOMPARE(logger.events.back()["status"].get<std::string>(), std::string("failed"));
    // Nothing already saved is touched: the same complete checkpoints, manifests unchanged.
    const auto after = tb::training::list_checkpoints(out.toStdString());
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      QVERIFY(after[i].complete);
      QCOMPARE(after[i].manifest.dump(), before[i].manifest.dump());
    }
  }

  void interruptedSaveLeavesPreviousCheckpoint() {
    const QString out = tmp_.filePath("interrupted");
    CollectingLogger logger;
    tb::RunControl control;
    run(out, {"epochs=1"}, logger, control);
    // A save that dies half-way: the fill step throws after writing part of the files.
    bool threw = false;
    try {
      tb::training::write_checkpoint_folder(
          out.toStdString(), "step_99",
          [](const std::string& folder) {
            std::ofstream(folder + "/model-00001-of-00001.safetensors") << "partial";
            throw std::runtime_error("disk full");
          },
          {{"step", 99}});
    } catch (const std::runtime_error&) {
      threw = true;
    }
    QVERIFY(threw);
    QVERIFY(!fs::exists((out + "/step_99").toStdString()));
    const auto newest = tb::training::newest_complete_checkpoint(out.toStdString());
    QVERIFY(newest.has_value());
    QCOMPARE(QString::fromStdString(fs::path(newest->path).filename().string()), QString("epoch_0"));
  }

  void activationCheckpointingGivesTheSameGradients() {
    torch::manual_seed(0);
    auto model = tb::models::build_decoder(*tb::models::preset_args("llama_tiny_test"));
    tb::models::init_weights(*model, 7);
    auto tokens = torch::randint(0, 512, {2, 16}, torch::kLong);
    auto grads = [&](bool checkpointed) {
      model->zero_grad();
      auto h = checkpointed ? tb::training::checkpointed_forward_hidden(*model, tokens) : model->forward_hidden(tokens);
      model->output_projection(h).pow(2).mean().backward();
      std::vector<torch::Tensor> out;
      for (auto& p : model->parameters()) out.push_back(p.grad().clone());
      return out;
    };
    const auto plain = grads(false);
    const auto recomputed = grads(true);
    QCOMPARE(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i) QVERIFY(torch::allclose(plain[i], recomputed[i], 1e-5, 1e-7));
  }
};

QTEST_GUILESS_MAIN(TestFullFinetune)
#include "test_full_finetune.moc"
