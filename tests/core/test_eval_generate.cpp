// `tunebench-cli eval` and `generate` against the independent reference (tests/reference/
// hf_llama_reference.py): a checkpoint that program writes in the Hugging Face layout (GQA,
// rope_theta 31337, fp32 and bf16 weights) scored on bundled text through the real SentencePiece
// tokenizer, with padding in our batches and none in the reference; greedy decoding with our KV
// cache against the reference re-running the whole sequence for every token.
#include <QtTest>

#include "test_main.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fstream>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/schema.h"
#include "inference/chat_session.h"
#include "inference/generate.h"
#include "test_support.h"
#include "tokenizers_reference.h"

namespace {

const QString kTokenizer = QString(TB_SOURCE_DIR) + "/resources/tokenizer/tokenizer.model";
constexpr int kMaxSeqLen = 24;  // short enough that several documents are cut

QJsonObject parse(const QString& line) { return QJsonDocument::fromJson(line.toUtf8()).object(); }

}  // namespace

class TestEvalGenerate : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_;

  QString variant(const QString& name) const { return dir_.path() + "/" + name; }

  // A config as a user writes one for eval: the checkpoint folder, the bundled tokenizer, a text file.
  QString writeConfig(const QString& checkpoint, const QString& dtype, int batchSize) const {
    const QString path = dir_.path() + "/eval_" + QFileInfo(checkpoint).fileName() + "_" + dtype + ".yaml";
    std::ofstream out(path.toStdString());
    out << "output_dir: " << dir_.path().toStdString() << "/out\n"
        << "model:\n  _component_: tunebench.models.from_hf_config\n  path: " << checkpoint.toStdString() << "\n"
        << "tokenizer:\n  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: " << kTokenizer.toStdString()
        << "\n  max_seq_len: " << kMaxSeqLen << "\n"
        << "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: "
        << checkpoint.toStdString() << "\n  model_type: LLAMA2\n  output_dir: ${output_dir}\n"
        << "dataset:\n  _component_: torchtune.datasets.text_completion_dataset\n  source: text\n  data_files: "
        << dir_.path().toStdString() << "/docs.txt\n"
        << "batch_size: " << batchSize << "\ndtype: " << dtype.toStdString() << "\nnum_threads: 1\nseed: 0\n";
    return path;
  }

  // A folder with the Qwen fixture's tokenizer.json and Qwen3's chat template, as a model folder has them.
  QString qwen3TokenizerFolder() const { return dir_.path() + "/qwen3_tokenizer"; }
  std::string qwen3TokenizerJson() const { return (qwen3TokenizerFolder() + "/tokenizer.json").toStdString(); }
  tb::config::LoadResult qwen3ChatConfig(const std::vector<std::string>& extra = {}) const {
    const QString folder = qwen3TokenizerFolder();
    if (!QFileInfo(folder + "/tokenizer_config.json").isFile()) {
      QDir().mkpath(folder);
      tbtest::write_file(qwen3TokenizerJson(), tbtest::read_file(TB_SOURCE_DIR "/tests/data/tokenizers/qwen/tokenizer.json"));
      nlohmann::json config = {{"bos_token", nullptr},
                               {"eos_token", "<|im_end|>"},
                               {"chat_template", tbtest::read_file(TB_SOURCE_DIR "/tests/data/chat_templates/qwen3.jinja")}};
      tbtest::write_file((folder + "/tokenizer_config.json").toStdString(), config.dump());
    }
    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = tb::config::kInferenceVerbs;
    options.overrides = {"tokenizer=tunebench.data.hf_tokenizer", "tokenizer.path=" + folder.toStdString()};
    options.overrides.insert(options.overrides.end(), extra.begin(), extra.end());
    return tb::config::load_file(writeConfig(variant("fp32_gqa"), "fp32", 1).toStdString(), options);
  }

 private Q_SLOTS:
  void initTestCase() {
    cli_ = qEnvironmentVariable("TB_CLI");
    QVERIFY2(QFileInfo(cli_).isExecutable(), "TB_CLI must name the tunebench-cli binary");
    QVERIFY2(!tbtest::reference_python().isEmpty(),
             "python3 with python3-torch and python3-sentencepiece is needed (scripts/setup.sh test installs them)");
    const auto made = tbtest::run_reference("hf_llama_reference.py", {"make-vocab", dir_.path(), "2048"});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    // Seven documents of the bundled corpus, of different lengths: some longer than max_seq_len.
    QFile corpus(QString(TB_SOURCE_DIR) + "/resources/corpus/tunebench_stories.txt");
    QVERIFY(corpus.open(QIODevice::ReadOnly | QIODevice::Text));
    QFile docs(dir_.path() + "/docs.txt");
    QVERIFY(docs.open(QIODevice::WriteOnly | QIODevice::Text));
    int written = 0;
    while (written < 7 && !corpus.atEnd()) {
      const QString line = QString::fromUtf8(corpus.readLine()).trimmed();
      if (line.isEmpty()) continue;
      docs.write(line.left(20 + 25 * written).toUtf8() + "\n");
      ++written;
    }
    QCOMPARE(written, 7);
  }

  void evalMatchesTheReference_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("batchSize");
    QTest::newRow("fp32 weights, batches of 3") << "fp32_gqa" << 3;
    QTest::newRow("bf16 weights, batches of 3") << "bf16_gqa" << 3;
    QTest::newRow("fp32 weights, one batch of all") << "fp32_gqa" << 7;
  }
  void evalMatchesTheReference() {
    QFETCH(QString, name);
    QFETCH(int, batchSize);
    const auto reference = tbtest::run_reference(
        "hf_llama_reference.py",
        {"eval-text", variant(name), kTokenizer, dir_.path() + "/docs.txt", QString::number(kMaxSeqLen)});
    QVERIFY2(reference.code == 0, qPrintable(reference.err));
    const QJsonObject expected = parse(tbtest::last_line(reference.out));

    const auto ours = tbtest::run_process(cli_, {"eval", "--config", writeConfig(variant(name), "fp32", batchSize)});
    QVERIFY2(ours.code == 0 && !ours.crashed, qPrintable(ours.err));
    const QJsonObject got = parse(tbtest::last_line(ours.out));
    QCOMPARE(got.value("tokens").toInt(), expected.value("tokens").toInt());
    const double loss = got.value("loss").toDouble(), want = expected.value("loss").toDouble();
    QVERIFY2(std::abs(loss - want) <= 1e-4 * std::abs(want),
             qPrintable(QString("loss %1, reference %2").arg(loss, 0, 'g', 10).arg(want, 0, 'g', 10)));
    QVERIFY(std::abs(got.value("perplexity").toDouble() - std::exp(loss)) <= 1e-9 * std::exp(loss));
  }

  void evalInBf16IsCloseButNotExact() {
    // bf16 compute rounds every activation: the loss moves a little, the positions do not.
    const auto fp32 = tbtest::run_process(cli_, {"eval", "--config", writeConfig(variant("bf16_gqa"), "fp32", 3)});
    const auto bf16 = tbtest::run_process(cli_, {"eval", "--config", writeConfig(variant("bf16_gqa"), "bf16", 3)});
    QVERIFY2(fp32.code == 0 && bf16.code == 0, qPrintable(fp32.err + bf16.err));
    const QJsonObject a = parse(tbtest::last_line(fp32.out)), b = parse(tbtest::last_line(bf16.out));
    QCOMPARE(a.value("tokens").toInt(), b.value("tokens").toInt());
    const double rel = std::abs(a.value("loss").toDouble() - b.value("loss").toDouble()) / a.value("loss").toDouble();
    QVERIFY2(rel < 0.02, qPrintable(QString::number(rel)));
  }

  void evalOfAMissingCheckpointIsOneLine() {
    const auto r = tbtest::run_process(
        cli_, {"eval", "--config", writeConfig(variant("fp32_gqa"), "fp32", 3),
               "checkpointer.checkpoint_dir=" + dir_.path() + "/nowhere"});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.count('\n') == 1 && r.err.contains("nowhere"), qPrintable(r.err));
  }

  // eval and generate say the checkpointer's warnings (they were dropped: a model_type naming another
  // family, an lm_head copied from the embedding).
  void loadWarningsAreShown() {
    const QString config = writeConfig(variant("fp32_gqa"), "fp32", 3);
    const auto eval = tbtest::run_process(cli_, {"eval", "--config", config, "checkpointer.model_type=QWEN2"});
    QVERIFY2(eval.code == 0, qPrintable(eval.err));
    QVERIFY2(eval.err.contains("eval: warning: checkpointer.model_type QWEN2 names another family"), qPrintable(eval.err));
    const auto gen = tbtest::run_process(
        cli_, {"generate", "--config", config, "checkpointer.model_type=QWEN2", "--prompt", "Once", "--max-new-tokens", "2"});
    QVERIFY2(gen.code == 0, qPrintable(gen.err));
    QVERIFY2(gen.err.contains("generate: warning: checkpointer.model_type QWEN2"), qPrintable(gen.err));
  }

  // Weights holding NaN: the JSON line says "loss": null, and the exit status is no longer 0.
  void nonFiniteLossFailsTheEval() {
    const QString folder = dir_.path() + "/nan_weights";
    QDir().mkpath(folder);
    QVERIFY(QFile::copy(variant("fp32_gqa") + "/config.json", folder + "/config.json"));
    auto state = tb::checkpoint::load_hf_state(variant("fp32_gqa").toStdString(), {});
    state["model.norm.weight"] = torch::full_like(state["model.norm.weight"], std::nan(""));
    tb::checkpoint::save_safetensors((folder + "/model.safetensors").toStdString(), state);
    const auto r = tbtest::run_process(cli_, {"eval", "--config", writeConfig(folder, "fp32", 3)});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("eval: the loss is not finite"), qPrintable(r.err));
    QVERIFY(parse(tbtest::last_line(r.out)).value("loss").isNull());
  }

  void greedyDecodingWithTheCacheMatchesTheReference() {
    const QString prompt = "Once upon a time";
    constexpr int kNew = 20;
    const auto reference = tbtest::run_reference(
        "hf_llama_reference.py", {"greedy", variant("fp32_gqa"), kTokenizer, prompt, QString::number(kNew)});
    QVERIFY2(reference.code == 0, qPrintable(reference.err));
    const QJsonArray want = parse(tbtest::last_line(reference.out)).value("tokens").toArray();
    QVERIFY(want.size() > 3);

    tb::config::LoadOptions options;
    options.registry = &tb::components::builtin();
    options.recipe = tb::config::kInferenceVerbs;
    const auto loaded = tb::config::load_file(writeConfig(variant("fp32_gqa"), "fp32", 1).toStdString(), options);
    QVERIFY2(loaded.ok(), tb::config::format_diagnostics(loaded.diagnostics).c_str());
    tb::inference::GenerateOptions g;
    g.prompt = prompt.toStdString();
    g.max_new_tokens = kNew;
    int streamed = 0;
    const auto result = tb::inference::generate(*loaded.config, g, [&](const std::string&) { ++streamed; });
    QCOMPARE(int(result.tokens.size()), int(want.size()));
    for (int i = 0; i < want.size(); ++i) QCOMPARE(result.tokens[size_t(i)], int64_t(want[i].toInt()));
    QCOMPARE(streamed, int(result.tokens.size()));
    QCOMPARE(result.stopped_at_eos, want.size() < kNew);
  }

  // --chat: the prompt goes in as a user turn through the model's chat template with its generation prompt
  // (a folder made from the Qwen fixture and Qwen3's template; ids checked against Hugging Face tokenizers).
  void chatPromptGoesThroughTheTemplate() {
    const auto loaded = qwen3ChatConfig();
    QVERIFY2(loaded.ok(), tb::config::format_diagnostics(loaded.diagnostics).c_str());
    tb::inference::GenerateOptions g;
    g.prompt = "Hi there";
    g.chat = true;
    g.system = "Be brief.";
    g.max_new_tokens = 2;
    // The config's max_seq_len (24) cannot hold this prompt: refused, not cut before the assistant's header.
    try {
      tb::inference::generate(*loaded.config, g);
      QFAIL("generated from a truncated prompt");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("max_seq_len"), e.what());
    }
    auto longer = *loaded.config;
    longer.root = YAML::Clone(longer.root);
    longer.root["tokenizer"]["max_seq_len"] = 64;
    const auto result = tb::inference::generate(longer, g);
    QCOMPARE(result.prompt_tokens,
             tbtest::tokenizers_reference_ids(qwen3TokenizerJson(), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                                                              "Hi there<|im_end|>\n<|im_start|>assistant\n"));
  }

  // The Chat tab's session (the model reads 64 tokens: short turns): a conversation of several turns
  // goes through Qwen3's template as Hugging Face tokenizers encodes the rendered text, and the greedy
  // reply (KV cache) is the reference's, which re-runs the whole sequence for each token and stops before
  // <|im_end|>. A second reply on the same loaded model stops when the caller says so.
  void chatSessionContinuesAConversationAsTheReference() {
    const auto loaded = qwen3ChatConfig({"tokenizer.max_seq_len=96"});
    QVERIFY2(loaded.ok(), tb::config::format_diagnostics(loaded.diagnostics).c_str());
    tb::inference::ChatSession session(*loaded.config);
    const std::vector<tb::inference::ChatTurn> conversation = {
        {"system", "Hi"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Go"}};
    tb::inference::ChatSettings greedy;
    greedy.temperature = 0;
    greedy.max_new_tokens = 12;
    std::string streamed;
    const auto reply = session.reply(conversation, greedy, [&](const std::string& so_far) {
      streamed = so_far;
      return true;
    });
    QCOMPARE(reply.prompt_tokens,
             tbtest::tokenizers_reference_ids(qwen3TokenizerJson(),
                                              "<|im_start|>system\nHi<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                                              "<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\nGo<|im_end|>\n"
                                              "<|im_start|>assistant\n"));
    nlohmann::json ids = reply.prompt_tokens;
    const QString idsFile = dir_.path() + "/chat_prompt.json";
    tbtest::write_file(idsFile.toStdString(), ids.dump());
    const auto stop = tbtest::tokenizers_reference_ids(qwen3TokenizerJson(), "<|im_end|>");
    QCOMPARE(int(stop.size()), 1);
    const auto reference = tbtest::run_reference(
        "hf_llama_reference.py", {"greedy-ids", variant("fp32_gqa"), idsFile, "12", QString::number(stop[0])});
    QVERIFY2(reference.code == 0, qPrintable(reference.err));
    const QJsonArray want = parse(tbtest::last_line(reference.out)).value("tokens").toArray();
    QCOMPARE(int(reply.tokens.size()), int(want.size()));
    for (int i = 0; i < want.size(); ++i) QCOMPARE(reply.tokens[size_t(i)], int64_t(want[i].toInt()));
    QCOMPARE(streamed, reply.text);
    QVERIFY(!reply.cancelled);

    // The single-turn formats read the last user turn alone: plain text is its ids (Qwen has no BOS).
    tb::inference::ChatSettings plain = greedy;
    plain.format = tb::inference::ChatFormat::Plain;
    plain.max_new_tokens = 1;
    const auto continued = session.reply({{"user", "Hi"}, {"assistant", "Yo"}, {"user", "Go on"}}, plain);
    QCOMPARE(continued.prompt_tokens, tbtest::tokenizers_reference_ids(qwen3TokenizerJson(), "Go on"));

    int calls = 0;
    const auto stopped = session.reply(conversation, greedy, [&](const std::string&) { return ++calls < 3; });
    QVERIFY(stopped.cancelled);
    QCOMPARE(int(stopped.tokens.size()), 3);
    QCOMPARE(stopped.tokens, std::vector<int64_t>(reply.tokens.begin(), reply.tokens.begin() + 3));
  }

  void generateFromTheCliPrintsTheContinuation() {
    const auto r = tbtest::run_process(cli_, {"generate", "--config", writeConfig(variant("fp32_gqa"), "fp32", 1),
                                              "--prompt", "Once upon a time", "--max-new-tokens", "8"});
    QVERIFY2(r.code == 0 && !r.crashed, qPrintable(r.err));
    QVERIFY(!r.out.trimmed().isEmpty());
    QVERIFY2(r.err.contains("tokens in"), qPrintable(r.err));
    // Sampling is seeded: the same seed gives the same text.
    const QStringList sampled{"generate", "--config", writeConfig(variant("fp32_gqa"), "fp32", 1), "--prompt", "The",
                              "--temperature", "1.0", "--top-k", "50", "--seed", "7"};
    QCOMPARE(tbtest::run_process(cli_, sampled).out, tbtest::run_process(cli_, sampled).out);
  }
};

TB_TEST(TestEvalGenerate)
#include "test_eval_generate.moc"
