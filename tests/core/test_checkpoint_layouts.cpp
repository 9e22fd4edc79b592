// A model opened from a Hugging Face folder trains, and its checkpoints open everywhere: every family's
// folder in each layout the Hub ships (one model.safetensors; shards named by torchtune's
// {filename_format, max_filename}; one shard with its index) through train -> chat -> export -> resume.
// The run's config keeps naming the source folder's files; the checkpoint holds its own
// (model-00001-of-00001.safetensors), and its manifest says which: everything that opens it reads that.
#include <QtTest>

#include "test_main.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/safetensors.h"
#include "export/checkpoint_config.h"
#include "export/gguf_export.h"
#include "gguf_reader.h"
#include "inference/chat_session.h"
#include "models/transformer.h"
#include "recipe_test_support.h"
#include "test_support.h"
#include "training/run_checkpoint.h"

using namespace tb;

namespace {

// config.json of a small model of each family the decoder builds; the vocabulary is the bundled
// SentencePiece tokenizer's, so the chat test can talk to it.
nlohmann::json family_config(const std::string& family) {
  nlohmann::json c = {{"hidden_size", 64},        {"intermediate_size", 96}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"num_hidden_layers", 2},  {"vocab_size", 2048},
                      {"max_position_embeddings", 128}, {"rms_norm_eps", 1e-6},     {"rope_theta", 10000.0},
                      {"rope_scaling", nullptr},  {"tie_word_embeddings", false}, {"torch_dtype", "float32"},
                      {"bos_token_id", 1},        {"eos_token_id", 2},       {"hidden_act", "silu"}};
  auto set = [&](const char* arch, const char* type) {
    c["architectures"] = {arch};
    c["model_type"] = type;
  };
  if (family == "llama") set("LlamaForCausalLM", "llama");
  if (family == "mistral") set("MistralForCausalLM", "mistral"), c["sliding_window"] = nullptr;
  if (family == "qwen2") set("Qwen2ForCausalLM", "qwen2"), c["use_sliding_window"] = false, c["tie_word_embeddings"] = true;
  if (family == "qwen3") set("Qwen3ForCausalLM", "qwen3"), c["head_dim"] = 24, c["attention_bias"] = false;
  if (family.rfind("gemma", 0) == 0) {
    c["head_dim"] = 24, c["hidden_activation"] = "gelu_pytorch_tanh", c["hidden_act"] = "gelu_pytorch_tanh";
    c["tie_word_embeddings"] = true;
  }
  if (family == "gemma") set("GemmaForCausalLM", "gemma");
  if (family == "gemma2") {
    set("Gemma2ForCausalLM", "gemma2");
    c["query_pre_attn_scalar"] = 24, c["attn_logit_softcapping"] = 3.0, c["final_logit_softcapping"] = 6.0;
    c["sliding_window"] = 6, c["layer_types"] = {"sliding_attention", "full_attention"};
  }
  if (family == "gemma3") {
    set("Gemma3ForCausalLM", "gemma3_text");
    c["query_pre_attn_scalar"] = 24, c["sliding_window"] = 6, c["rope_local_base_freq"] = 10000.0;
    c["layer_types"] = {"sliding_attention", "sliding_attention"};  // llama.cpp's pattern: every sixth is full
  }
  if (family == "phi3") set("Phi3ForCausalLM", "phi3"), c["partial_rotary_factor"] = 0.5, c["pad_token_id"] = 0;
  return c;
}

const char* const kFamilies[] = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3"};

// The layouts a Hub folder comes in; a config names the files as torchtune's do (the shards by
// {filename_format, max_filename}), or none (the index says).
const char* const kLayouts[] = {"single", "sharded", "index"};

// Writes `folder` as a Hugging Face model folder of `family` in `layout`, with seeded random weights.
void write_model_folder(const QString& folder, const std::string& family, const std::string& layout) {
  QDir().mkpath(folder);
  const nlohmann::json cfg = family_config(family);
  {
    std::ofstream out((folder + "/config.json").toStdString());
    out << cfg.dump(2);
  }
  torch::manual_seed(11);
  auto model = models::build_decoder(checkpoint::read_hf_model_args(folder.toStdString()));
  const auto state = checkpoint::base_model_state(*model);
  uint64_t total = 0;
  for (const auto& [name, t] : state) total += uint64_t(t.numel() * t.element_size());
  // Several shards for "sharded" (a shard closes before it would pass the limit); one otherwise.
  checkpoint::save_model_state(folder.toStdString(), state, cfg, layout == "sharded" ? total / 4 + 1 : total * 2);
  if (layout == "single") {
    QVERIFY(QFile::rename(folder + "/model-00001-of-00001.safetensors", folder + "/model.safetensors"));
    QVERIFY(QFile::remove(folder + "/" + checkpoint::kIndexFileName));
  }
}

torch::Tensor tensor_in(const QString& folder, const std::string& name) {
  for (const auto& f : checkpoint::resolve_checkpoint_files(folder.toStdString(), {})) {
    auto tensors = checkpoint::load_safetensors((folder + "/" + QString::fromStdString(f)).toStdString());
    if (tensors.count(name)) return tensors.at(name).clone();
  }
  return {};
}

}  // namespace

class TestCheckpointLayouts : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void folderLayoutsTrainChatExportResume_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("layout");
    for (const char* family : kFamilies)
      for (const char* layout : kLayouts)
        QTest::newRow(qPrintable(QString("%1 %2").arg(family, layout))) << QString(family) << QString(layout);
  }
  void folderLayoutsTrainChatExportResume() {
    try {
      trainChatExportResume();
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  // The CLI's eval, generate and export take a checkpoint folder as it is (real processes).
  void cliOpensACheckpointFromAHubFolder();

 private:
  void trainChatExportResume() {
    QFETCH(QString, family);
    QFETCH(QString, layout);
    const QString model = tmp_.filePath(family + "-" + layout);
    write_model_folder(model, family.toStdString(), layout.toStdString());
    if (QTest::currentTestFailed()) return;
    const qsizetype shards = QDir(model).entryList({"model-*.safetensors"}).size();
    QString files = "[]";
    if (layout == "single") files = "[model.safetensors]";
    if (layout == "sharded") {
      QVERIFY2(shards >= 2, qPrintable(QString::number(shards)));
      files = QString("{filename_format: 'model-{}-of-{}.safetensors', max_filename: '%1'}").arg(shards, 5, 10, QChar('0'));
    }

    // Train one step from the folder, as a config that names its files.
    tbtest::TinyConfig config;
    config.from_folder(model.toStdString());
    config.checkpoint_files = files.toStdString();
    config.seq_len = 16, config.num_samples = 4, config.epochs = 1, config.max_steps_per_epoch = 1;
    config.gradient_accumulation_steps = 1, config.num_threads = 1;
    const QString out = tmp_.filePath("run-" + family + "-" + layout);
    tbtest::CollectingLogger log;
    training::RunControl control;
    const auto run = tbtest::run_recipe("full_finetune_single_device", config.text(out.toStdString()), {}, log, control);
    QVERIFY2(run.status == training::RunStatus::Completed, run.message.c_str());
    const QString ckpt = out + "/epoch_0";

    // The manifest says which files the checkpoint holds, and they are there with their sizes.
    const auto manifest = training::read_manifest(ckpt.toStdString());
    QVERIFY(manifest.has_value());
    const auto model_files = (*manifest)["model_files"];
    QCOMPARE(model_files, nlohmann::json({"model-00001-of-00001.safetensors"}));
    for (const auto& [name, bytes] : (*manifest)["files"].items())
      QCOMPARE(QFileInfo(ckpt + "/" + QString::fromStdString(name)).size(), bytes.get<qint64>());
    QVERIFY((*manifest)["files"].contains("config.json"));

    // Chat: the checkpoint and the model its run started from, each answers.
    const auto tuned = exporting::load_checkpoint_config(ckpt.toStdString(), false);
    QVERIFY2(tuned.ok(), config::format_diagnostics(tuned.diagnostics).c_str());
    inference::ChatSettings settings;
    settings.format = inference::ChatFormat::Plain, settings.temperature = 0, settings.max_new_tokens = 3;
    {
      inference::ChatSession chat(*tuned.config);
      QVERIFY2(chat.weights().find(ckpt.toStdString()) != std::string::npos, chat.weights().c_str());
      QVERIFY(!chat.reply({{"user", "Once upon a time"}}, settings).tokens.empty());
      const auto base = exporting::load_checkpoint_base_config(ckpt.toStdString());
      QVERIFY2(base.ok(), config::format_diagnostics(base.diagnostics).c_str());
      inference::ChatSession base_chat(*base.config);
      QVERIFY(!base_chat.reply({{"user", "Once upon a time"}}, settings).tokens.empty());
    }

    // Export: the GGUF holds the trained embedding, not the source folder's.
    exporting::GgufExportOptions options;
    options.output = (out + "/model.gguf").toStdString();
    options.type = "f32";
    const auto exported = exporting::export_gguf(*tuned.config, options);
    const auto gguf = tbtest::parse_gguf(tbtest::read_file(exported.path));
    const auto trained = tensor_in(ckpt, "model.embed_tokens.weight");
    const auto source = tensor_in(model, "model.embed_tokens.weight");
    QVERIFY(trained.defined() && source.defined());
    QVERIFY(!torch::equal(trained, source));  // the step changed it
    const auto& info = gguf.tensor("token_embd.weight");
    const auto in_gguf = torch::from_blob(const_cast<char*>(gguf.data(info)), trained.sizes(), torch::kFloat);
    QVERIFY(torch::equal(in_gguf, trained.to(torch::kFloat)));

    // Resume: one more epoch from the checkpoint, its weights read from the files it holds.
    tbtest::CollectingLogger resumed;
    training::RunControl again;
    const auto second = tbtest::run_recipe("full_finetune_single_device", config.text(out.toStdString()),
                                           {"epochs=2", "resume_from_checkpoint=true"}, resumed, again);
    QVERIFY2(second.status == training::RunStatus::Completed, second.message.c_str());
    QCOMPARE(resumed.steps.size(), size_t(1));
    QCOMPARE(resumed.steps.front().step, int64_t(2));
  }
};

void TestCheckpointLayouts::cliOpensACheckpointFromAHubFolder() {
    const QString cli = qEnvironmentVariable("TB_CLI");
    if (cli.isEmpty()) QSKIP("TB_CLI is not set (run under CTest)");
    const QString model = tmp_.filePath("cli-model");
    write_model_folder(model, "qwen3", "single");
    tbtest::TinyConfig config;
    config.from_folder(model.toStdString());
    config.seq_len = 16, config.num_samples = 4, config.epochs = 1, config.max_steps_per_epoch = 1;
    config.gradient_accumulation_steps = 1, config.num_threads = 1;
    const QString out = tmp_.filePath("cli-run");
    tbtest::CollectingLogger log;
    training::RunControl control;
    const auto run = tbtest::run_recipe("full_finetune_single_device", config.text(out.toStdString()), {}, log, control);
    QVERIFY2(run.status == training::RunStatus::Completed, run.message.c_str());
    const QString ckpt = out + "/epoch_0";
    auto cliRun = [&](const QStringList& args) {
      QProcess p;
      p.start(cli, args);
      const bool done = p.waitForFinished(300000);
      const QString said = QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
      return std::make_pair(done && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, said);
    };
    for (const QStringList& args :
         {QStringList{"generate", "--checkpoint", ckpt, "--prompt", "Once", "--max-new-tokens", "3", "--temperature", "0"},
          QStringList{"eval", "--checkpoint", ckpt, "num_threads=1"},
          QStringList{"export", "gguf", "--checkpoint", ckpt, "--output", out + "/cli.gguf", "--type", "f16", "--ollama"}}) {
      const auto [ok, said] = cliRun(args);
      QVERIFY2(ok, qPrintable(args.join(' ') + ": " + said));
      QVERIFY2(!said.contains("does not exist"), qPrintable(said));
    }
    QVERIFY(QFileInfo(out + "/cli.gguf").size() > 0);
    // Not trained on the Alpaca format (synthetic tokens) and no chat template: no TEMPLATE (test_gguf has one).
    QVERIFY(tbtest::read_file((out + "/Modelfile").toStdString()).find("TEMPLATE") == std::string::npos);
    // Neither flag, or both, is refused in one line.
    const auto [neither, why] = cliRun({"eval"});
    QVERIFY(!neither);
    QVERIFY2(why.contains("--config or --checkpoint"), qPrintable(why));
}

TB_TEST(TestCheckpointLayouts)
#include "test_checkpoint_layouts.moc"
