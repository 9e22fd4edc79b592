// full_finetune_single_device in torchtune's recipe-test style: a tiny Hugging Face checkpoint made
// by an independent program, fixed seed, 2 epochs x 2 steps, losses compared with PyTorch's own
// training of the same weights on the same batches; then resume, stop, NaN and checkpoint round trips.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "models/transformer.h"
#include "recipe.h"
#include "model_test_support.h"
#include "recipe_test_support.h"
#include "test_support.h"
#include "models/activation_checkpointing.h"
#include "config/schema.h"
#include "training/gradient_hooks.h"
#include "training/recipe_state.h"
#include "training/run_checkpoint.h"
#include "training/run_settings.h"
#include "training/train_step.h"

namespace fs = std::filesystem;

namespace {

using tbtest::CollectingLogger;

// The last line of a reference script's output, empty when it failed.
QString runReference(const QString& script, const QStringList& args) {
  const auto r = tbtest::run_reference(script, args);
  return r.code == 0 ? tbtest::last_line(r.out).trimmed() : QString();
}

}  // namespace

class TestFullFinetune : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString base_;  // the reference checkpoint folder

  std::string configText(const QString& output_dir) const {
    tbtest::TinyConfig config;
    config.from_folder(base_.toStdString());
    config.as_train_reference("0.001");
    return config.text(output_dir.toStdString());
  }

  tb::training::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides,
                               CollectingLogger& logger, tb::training::RunControl& control) {
    return tbtest::run_recipe("full_finetune_single_device", configText(output_dir), overrides, logger, control);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY2(!tbtest::reference_python().isEmpty(), "python3 with python3-torch is needed for the reference (scripts/setup.sh installs it)");
    QVERIFY2(!runReference("hf_llama_reference.py", {"make", tmp_.filePath("ref")}).isEmpty(),
             "the reference checkpoint script failed");
    base_ = tmp_.filePath("ref/fp32_gqa");
  }

  void lossesMatchPyTorchReference() {
    const QString out = runReference("train_reference.py", {base_,
                                   R"({"epochs":2,"steps":2,"batch_size":2,"grad_accum":1,"seq_len":12,)"
                                   R"("num_samples":8,"seed":0,"lr":0.001,"weight_decay":0.01,"clip":0})"});
    QVERIFY2(!out.isEmpty(), "the reference training script failed");
    const auto expected = nlohmann::json::parse(out.toStdString())["losses"].get<std::vector<double>>();
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto result = run(tmp_.filePath("run_ref"), {}, logger, control);
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
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
    tb::training::RunControl ca, cb;
    run(tmp_.filePath("accum_a"), {"gradient_accumulation_steps=2", "epochs=1"}, a, ca);
    run(tmp_.filePath("accum_b"), {"gradient_accumulation_steps=2", "epochs=1"}, b, cb);
    QCOMPARE(a.losses().size(), size_t(2));
    QCOMPARE(a.losses(), b.losses());
    QCOMPARE(a.steps[0].tokens, int64_t(2 * 2 * 11));  // two micro-batches of 2 x 11 predicted tokens
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
    QCOMPARE(first.events.back()["status"].get<std::string>(), std::string("stopped"));
    QVERIFY(tb::training::read_manifest((out + "/step_3").toStdString()).has_value());

    CollectingLogger second;
    tb::training::RunControl second_control;
    const auto resumed = run(out, {"resume_from_checkpoint=true"}, second, second_control);
    QVERIFY2(resumed.status == tb::training::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(1));
    QCOMPARE(second.steps[0].step, int64_t(4));
    QVERIFY(second.steps[0].resumed_before);
    QCOMPARE(second.steps[0].loss, full.steps[3].loss);  // bitwise: the run continues exactly
  }

  // checkpointer.keep_last_n_checkpoints: after each new complete checkpoint only the newest n remain.
  void keepLastNCheckpoints() {
    const QString out = tmp_.filePath("keep_last");
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto r = run(out, {"save_every_n_steps=1", "checkpointer.keep_last_n_checkpoints=2"}, logger, control);
    QVERIFY2(r.status == tb::training::RunStatus::Completed, r.message.c_str());
    std::vector<std::string> written, kept;
    int removed = 0;
    for (const auto& e : logger.events) {
      if (e.value("event", "") == "checkpoint") written.push_back(e["path"]);
      removed += e.value("event", "") == "checkpoint_removed";
    }
    for (const auto& c : tb::training::list_checkpoints(out.toStdString())) {
      QVERIFY(c.complete);
      kept.push_back(c.path);
    }
    QVERIFY2(written.size() >= 4, std::to_string(written.size()).c_str());
    std::sort(kept.begin(), kept.end());
    std::vector<std::string> newest(written.end() - 2, written.end());
    std::sort(newest.begin(), newest.end());
    QCOMPARE(kept, newest);  // the two written last
    QCOMPARE(removed, int(written.size()) - 2);
    // Below 1 is refused when the config is validated.
    const auto bad = tbtest::load_config(configText(out), "full_finetune_single_device",
                                         {"checkpointer.keep_last_n_checkpoints=0"});
    QVERIFY(!bad.ok());
  }

  void zeroStepsSavesTheWeightsUnchanged() {
    // The seed's round trip: max_steps_per_epoch=0 epochs=1 saves a checkpoint that loads back.
    const QString out = tmp_.filePath("zero");
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto result = run(out, {"max_steps_per_epoch=0", "epochs=1"}, logger, control);
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
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
    tb::training::RunControl again_control;
    const auto second = run(tmp_.filePath("zero_again"),
                            {"checkpointer.checkpoint_dir=" + (out + "/epoch_0").toStdString(),
                             "checkpointer.checkpoint_files=[model-00001-of-00001.safetensors]", "epochs=1"},
                            again, again_control);
    QVERIFY2(second.status == tb::training::RunStatus::Completed, second.message.c_str());
    QCOMPARE(again.steps.size(), size_t(2));
  }

  void relativeOutputDirHoldsTheModelFiles() {
    // The bundled configs name output_dir relative to where the run starts.
    const QString cwd = QDir::currentPath();
    QVERIFY(QDir::setCurrent(tmp_.path()));
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto r = run("relative_out", {"max_steps_per_epoch=0", "epochs=1"}, logger, control);
    QDir::setCurrent(cwd);
    QVERIFY2(r.status == tb::training::RunStatus::Completed, r.message.c_str());
    for (const char* file : {"config.json", "model.safetensors.index.json", "model-00001-of-00001.safetensors",
                             "recipe_state.json", "tunebench_checkpoint.json"})
      QVERIFY2(fs::exists(tmp_.filePath(QString("relative_out/epoch_0/") + file).toStdString()), file);
  }

  void nanLossFailsAndKeepsCheckpoints() {
    // A first run leaves complete checkpoints in the output folder.
    const QString out = tmp_.filePath("diverge");
    CollectingLogger good;
    tb::training::RunControl good_control;
    const auto first = run(out, {"save_every_n_steps=1", "epochs=1"}, good, good_control);
    QVERIFY2(first.status == tb::training::RunStatus::Completed, first.message.c_str());
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
    tb::training::RunControl control;
    const auto result = run(out, {"save_every_n_steps=1", "epochs=1", "model.path=" + poisoned.toStdString(),
                                  "checkpointer.checkpoint_dir=" + poisoned.toStdString()},
                            logger, control);
    QCOMPARE(int(result.status), int(tb::training::RunStatus::Failed));
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
    tb::training::RunControl control;
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

  // Bug: with batches_per_epoch % gradient_accumulation_steps != 0 the leftover micro-batch's gradients
  // carried into the next epoch's first step (divided by that step's tokens only), so a run resumed
  // from epoch_N differed from an uninterrupted one. 3 batches per epoch, 2 per step: 1 step an epoch.
  void leftoverMicroBatchesDoNotCarryIntoTheNextEpoch() {
    const std::vector<std::string> shape = {"dataset.num_samples=6", "max_steps_per_epoch=null",
                                            "gradient_accumulation_steps=2"};
    auto with = [&](std::vector<std::string> more) {
      more.insert(more.begin(), shape.begin(), shape.end());
      return more;
    };
    CollectingLogger whole;
    tb::training::RunControl whole_control;
    const auto uninterrupted = run(tmp_.filePath("leftover_whole"), with({"epochs=3"}), whole, whole_control);
    QVERIFY2(uninterrupted.status == tb::training::RunStatus::Completed, uninterrupted.message.c_str());
    QCOMPARE(whole.steps.size(), size_t(3));
    QCOMPARE(whole.steps[0].tokens, int64_t(2 * 2 * 11));  // two whole micro-batches; the third is not read
    QCOMPARE(whole.steps[0].total_steps, int64_t(3));

    const QString out = tmp_.filePath("leftover_split");
    CollectingLogger first, second;
    tb::training::RunControl first_control, second_control;
    QVERIFY(run(out, with({"epochs=1"}), first, first_control).status == tb::training::RunStatus::Completed);
    const auto resumed = run(out, with({"epochs=3", "resume_from_checkpoint=true"}), second, second_control);
    QVERIFY2(resumed.status == tb::training::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.steps.size(), size_t(2));
    QCOMPARE(second.steps[0].loss, whole.steps[1].loss);
    QCOMPARE(second.steps[1].loss, whole.steps[2].loss);  // bitwise: the weights after step 2 agree
    const auto a = tb::checkpoint::load_hf_state(tmp_.filePath("leftover_whole/epoch_2").toStdString(), {});
    const auto b = tb::checkpoint::load_hf_state((out + "/epoch_2").toStdString(), {});
    for (const auto& [name, tensor] : a) QVERIFY2(torch::equal(tensor, b.at(name)), name.c_str());
  }

  // Bug: `seed: null` (every real-model config's) silently meant 0. It picks a seed, says so, and
  // checkpoints record it; a resumed run takes it from there.
  void nullSeedPicksOneAndCheckpointsRecordIt() {
    std::vector<uint64_t> seeds;
    for (const char* name : {"null_seed_a", "null_seed_b"}) {
      CollectingLogger logger;
      tb::training::RunControl control;
      const auto result = run(tmp_.filePath(name), {"seed=null", "epochs=1"}, logger, control);
      QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
      const std::string said = logger.info_containing("seed ");
      QVERIFY2(said.find("picked") != std::string::npos, said.c_str());
      const auto manifest = tb::training::read_manifest(tmp_.filePath(QString(name) + "/epoch_0").toStdString());
      QVERIFY(manifest && manifest->contains("seed"));
      const uint64_t seed = (*manifest)["seed"].get<uint64_t>();
      QVERIFY2(said.find("seed " + std::to_string(seed)) != std::string::npos, said.c_str());
      QCOMPARE(tb::training::read_recipe_counters(tmp_.filePath(QString(name) + "/epoch_0").toStdString()).seed, seed);
      seeds.push_back(seed);
    }
    QVERIFY(seeds[0] != seeds[1]);
    // Resuming keeps the recorded seed whatever the config says now, and says so when they differ.
    CollectingLogger resumed;
    tb::training::RunControl control;
    const auto again = run(tmp_.filePath("null_seed_a"), {"seed=5", "epochs=2", "resume_from_checkpoint=true"},
                           resumed, control);
    QVERIFY2(again.status == tb::training::RunStatus::Completed, again.message.c_str());
    const auto manifest = tb::training::read_manifest(tmp_.filePath("null_seed_a/epoch_1").toStdString());
    QCOMPARE((*manifest)["seed"].get<uint64_t>(), seeds[0]);
    bool warned = false;
    for (const auto& e : resumed.events)
      warned |= e.value("event", "") == "warning" && e.value("message", "").find("seed") != std::string::npos;
    QVERIFY(warned);
  }

  // Bug: the code's own defaults disagreed with the schema's (log_peak_memory_stats: true in code,
  // false in the schema), which showed wherever a config reached a recipe without the schema's
  // defaults filled in. The recipes now read every setting through the schema.
  void settingsDefaultToTheSchema() {
    const std::string text = configText(tmp_.filePath("defaults"));
    const auto loaded = tbtest::load_config(text, "full_finetune_single_device");
    QVERIFY(loaded.ok());
    // The same config without the defaults the loader filled in.
    const YAML::Node written = YAML::Load(text);
    tb::config::Config bare = *loaded.config;
    bare.root = YAML::Clone(loaded.config->root);
    for (const auto& key : tb::config::recipe_schema())
      if (key.component_kind.empty() && !written[key.value.name].IsDefined()) bare.root.remove(key.value.name);
    QVERIFY(!bare.root["log_peak_memory_stats"].IsDefined());
    const auto settings = tb::training::read_run_settings(bare);
    const auto filled = tb::training::read_run_settings(*loaded.config);
    QCOMPARE(settings.loop.log_peak_memory_stats, filled.loop.log_peak_memory_stats);
    QCOMPARE(settings.loop.log_peak_memory_stats, false);
    QCOMPARE(settings.compile, filled.compile);
    QCOMPARE(settings.clip_grad_norm, filled.clip_grad_norm);
    QCOMPARE(settings.resume_from_checkpoint, filled.resume_from_checkpoint);
    QCOMPARE(settings.loop.save_every_n_steps, filled.loop.save_every_n_steps);
    // A run of the bare config tracks no memory, as the schema says.
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto result = tb::find_recipe("full_finetune_single_device")->run(bare, logger, control);
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
    QVERIFY(!logger.steps.empty());
    for (const auto& step : logger.steps) QCOMPARE(step.peak_memory_gib, 0.0);
  }

  // Keys accepted because torchtune's configs carry them, set to something they would do there: the
  // run says they do nothing here.
  void noEffectKeysWarn() {
    CollectingLogger logger;
    tb::training::RunControl control;
    const auto result = run(tmp_.filePath("no_effect"),
                            {"epochs=1", "enable_activation_offloading=True",
                             "profiler._component_=torchtune.training.setup_torch_profiler", "profiler.enabled=true"},
                            logger, control);
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
    QStringList warnings;
    for (const auto& e : logger.events)
      if (e.value("event", "") == "warning") warnings << QString::fromStdString(e.value("message", ""));
    // The profiler works (it traces), so it is not one of them.
    QCOMPARE(warnings.size(), 1);
    QVERIFY2(warnings.join('\n').contains("enable_activation_offloading: True is accepted"), qPrintable(warnings.join('\n')));
  }

  // optimizer_in_bwd steps each parameter inside backward with the arithmetic of the step after it: the
  // losses and the saved weights and AdamW states are those of the plain run bit for bit (eager and
  // compiled; the plain run is the one checked against PyTorch above), and the memory line counts one
  // gradient at a time.
  void optimizerInBackwardGivesTheStepAfterBackward_data() {
    QTest::addColumn<QString>("how");
    QTest::newRow("eager") << "compile=false";
    QTest::newRow("compiled") << "compile=true";
    QTest::newRow("activation checkpointing") << "enable_activation_checkpointing=true";
    // Its chunks recompute the head in backward: the head must step once, on its whole gradient.
    QTest::newRow("LinearCrossEntropyLoss") << "loss._component_=torchtune.modules.loss.LinearCrossEntropyLoss";
  }
  void optimizerInBackwardGivesTheStepAfterBackward() {
    QFETCH(QString, how);
    const QString tag = QString::number(qHash(how));
    CollectingLogger after, in_bwd;
    tb::training::RunControl c1, c2;
    const auto a = run(tmp_.filePath("after_" + tag), {how.toStdString()}, after, c1);
    const auto b = run(tmp_.filePath("in_bwd_" + tag), {how.toStdString(), "optimizer_in_bwd=true"}, in_bwd, c2);
    QVERIFY2(a.status == tb::training::RunStatus::Completed, a.message.c_str());
    QVERIFY2(b.status == tb::training::RunStatus::Completed, b.message.c_str());
    QCOMPARE(in_bwd.losses().size(), size_t(4));
    QCOMPARE(in_bwd.losses(), after.losses());
    const auto x = tbtest::folder_tensors(tmp_.filePath("after_" + tag + "/epoch_1"));
    const auto y = tbtest::folder_tensors(tmp_.filePath("in_bwd_" + tag + "/epoch_1"));
    QVERIFY(!x.empty());
    QCOMPARE(x.size(), y.size());
    for (const auto& [name, t] : x) QVERIFY2(torch::equal(t, y.at(name)), name.c_str());
    QVERIFY(!in_bwd.info_containing("one at a time: optimizer_in_bwd").empty());
    QVERIFY(after.info_containing("one at a time").empty());
  }

  // LinearCrossEntropyLoss recomputes each chunk's logits in backward. With a tied embedding the head is
  // also the embedding: each parameter's gradient hook must fire once per backward, after its whole
  // gradient (it fired per chunk: optimizer_in_bwd stepped the embedding on each chunk's part, and the
  // run failed with "modified by an inplace operation"); the gradients equal the unchunked loss's.
  void chunkedLossGradientsArriveOncePerParameter() {
    torch::manual_seed(0);
    const auto tokens = torch::randint(0, 512, {2, 16}, torch::kLong);
    const tb::data::TensorBatch batch{tokens, torch::randint(0, 512, {2, 16}, torch::kLong), {}};
    auto args = *tb::models::preset_args("llama_tiny_test");
    args.tie_word_embeddings = true;
    const tb::training::OptimizerFactory adamw = [](std::vector<torch::Tensor> params) {
      return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-3));
    };
    std::vector<torch::Tensor> reference;
    for (const bool chunked : {false, true}) {
      auto model = tb::models::build_decoder(args);
      tb::models::init_weights(*model, 7);
      tb::training::StepOptions options;
      if (chunked) options.loss = tb::models::LossSpec{-100, 4, /*recompute_chunks=*/true};
      CollectingLogger events;
      auto step = tb::training::make_train_step(model, adamw, options, events);
      std::map<const void*, int> fired;
      tb::training::GradientReadyHooks probe;
      for (const auto& p : step->trainable()) probe.add(p, [&fired, key = p.unsafeGetTensorImpl()] { ++fired[key]; });
      step->forward_backward(batch);
      QCOMPARE(fired.size(), step->trainable().size());
      for (const auto& [key, count] : fired) QCOMPARE(count, 1);
      for (size_t i = 0; i < step->trainable().size(); ++i) {
        const auto g = step->trainable()[i].grad();
        if (!chunked) {
          reference.push_back(g.clone());
          continue;
        }
        QVERIFY2(torch::allclose(g, reference[i], 1e-4, 1e-6), qPrintable(QString::number(i)));
      }
    }
    // And with optimizer_in_bwd the chunked, tied step runs (each parameter steps once inside backward).
    auto model = tb::models::build_decoder(args);
    tb::models::init_weights(*model, 7);
    tb::training::StepOptions options;
    options.loss = tb::models::LossSpec{-100, 4, true};
    options.optimizer_in_backward = true;
    CollectingLogger events;
    auto step = tb::training::make_train_step(model, adamw, options, events);
    step->forward_backward(batch);
    step->optimizer_step(2 * 16);
  }

  // The point of it: when backward makes a gradient, the ones before it have already stepped and gone.
  // A probe hooked after the step's own hooks counts the gradients held at each moment of backward.
  void optimizerInBackwardHoldsNoGradientsTogether() {
    torch::manual_seed(0);
    const auto tokens = torch::randint(0, 512, {2, 16}, torch::kLong);
    const tb::data::TensorBatch batch{tokens, torch::randint(0, 512, {2, 16}, torch::kLong), {}};
    for (const bool in_bwd : {false, true}) {
      auto model = tb::models::build_decoder(*tb::models::preset_args("llama_tiny_test"));
      tb::models::init_weights(*model, 7);
      tb::training::StepOptions options;
      options.optimizer_in_backward = in_bwd;
      CollectingLogger events;
      const tb::training::OptimizerFactory adamw = [](std::vector<torch::Tensor> params) {
        return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-3));
      };
      auto step = tb::training::make_train_step(model, adamw, options, events);
      const auto before = model->parameters()[1].clone();
      size_t most = 0, calls = 0;
      tb::training::GradientReadyHooks probe;
      for (const auto& p : step->trainable())
        probe.add(p, [&] {
          size_t held = 0;
          for (const auto& q : step->trainable()) held += q.grad().defined();
          most = std::max(most, held);
          ++calls;
        });
      step->forward_backward(batch);
      QCOMPARE(calls, step->trainable().size());
      if (in_bwd) {
        QCOMPARE(most, size_t(0));
        QVERIFY(!torch::equal(before, model->parameters()[1]));  // stepped inside backward
      } else {
        QCOMPARE(most, step->trainable().size());
        QVERIFY(torch::equal(before, model->parameters()[1]));
      }
      step->optimizer_step(2 * 16);
      QVERIFY(!torch::equal(before, model->parameters()[1]));
      for (const auto& q : step->trainable()) QVERIFY(!q.grad().defined());
    }
  }

  void activationCheckpointingGivesTheSameGradients() {
    torch::manual_seed(0);
    auto model = tb::models::build_decoder(*tb::models::preset_args("llama_tiny_test"));
    tb::models::init_weights(*model, 7);
    auto tokens = torch::randint(0, 512, {2, 16}, torch::kLong);
    auto grads = [&](bool checkpointed) {
      model->zero_grad();
      auto h = checkpointed ? tb::models::checkpointed_forward_hidden(*model, tokens) : model->forward_hidden(tokens);
      model->output_projection(h).pow(2).mean().backward();
      std::vector<torch::Tensor> out;
      for (auto& p : model->parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
      return out;
    };
    auto compare = [&] {
      const auto plain = grads(false);
      const auto recomputed = grads(true);
      QCOMPARE(plain.size(), recomputed.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        QCOMPARE(plain[i].defined(), recomputed[i].defined());
        if (plain[i].defined()) QVERIFY(torch::allclose(plain[i], recomputed[i], 1e-5, 1e-7));
      }
    };
    compare();
    // Frozen embedding and head, as under LoRA: the layers' weights still get their gradients
    // (the recomputed path used to give none, and backward failed with "does not require grad").
    model->tok_embeddings->weight.set_requires_grad(false);
    for (auto& p : model->named_parameters())
      if (p.key().rfind("output.", 0) == 0) p.value().set_requires_grad(false);
    compare();
  }
};

TB_TEST(TestFullFinetune)
#include "test_full_finetune.moc"
