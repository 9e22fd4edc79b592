// GGUF export, checked with a reader of the tests' own (support/gguf_reader.h): half/bfloat16 rounding
// against LibTorch's, every block type's quantize -> dequantize error against the bound its formula
// gives, the file's layout (header, typed metadata, tensor table, 32-byte alignment), llama.cpp's
// per-tensor type rules, and a whole export of the bundled base model (names, shapes, the rotary
// layout llama.cpp's converter writes, the SentencePiece vocabulary, a merged LoRA adapter).
// llama.cpp itself judges the files in test_gguf_llama_cpp.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "checkpoint/gguf_file.h"
#include "checkpoint/safetensors.h"
#include "data/chat_template.h"
#include "export/gguf_layout.h"
#include "export/ollama_modelfile.h"
#include "gguf_reader.h"
#include "lora_fixture.h"
#include "quant/ggml_blocks.h"
#include "test_support.h"

using tb::quant::GgmlType;

namespace {

const std::string kSource = TB_SOURCE_DIR;
const std::string kBaseModel = kSource + "/resources/base_model";

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> bytes;
  tb::quant::quantize_row(type, x.data(), static_cast<int64_t>(x.size()), bytes);
  if (static_cast<int64_t>(bytes.size()) != tb::quant::ggml_row_bytes(type, static_cast<int64_t>(x.size())))
    throw std::runtime_error("row of the wrong size");
  std::vector<float> y(x.size());
  tb::quant::dequantize_row(type, bytes.data(), static_cast<int64_t>(x.size()), y.data());
  return y;
}

double relative_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (x[i] - y[i]) * (x[i] - y[i]);
    den += x[i] * x[i];
  }
  return std::sqrt(num / den);
}

// llama.cpp's converter (LlamaModel.permute): Hugging Face's q/k rows back to pairs (2i, 2i+1) per head.
torch::Tensor llama_cpp_permute(const torch::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0);
  return w.reshape({heads, 2, rows / heads / 2, w.size(1)}).transpose(1, 2).reshape({rows, w.size(1)});
}

torch::Tensor f32_tensor(const tbtest::GgufFile& f, const std::string& name) {
  const auto& t = f.tensor(name);
  if (t.type != 0) throw std::runtime_error(name + " is not f32");
  std::vector<int64_t> shape(t.ne.rbegin(), t.ne.rend());
  int64_t n = 1;
  for (auto d : shape) n *= d;
  auto out = torch::empty(shape, torch::kFloat);
  std::memcpy(out.data_ptr<float>(), f.data(t), static_cast<size_t>(n) * 4);
  return out;
}

}  // namespace

class TestGguf : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_ = qEnvironmentVariable("TB_CLI");

  std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

  tbtest::ProcessResult exportModel(const QString& config, const std::string& out, const QString& type,
                                    const QStringList& overrides = {}) {
    QStringList args{"export", "gguf", "--config", config, "--output", QString::fromStdString(out), "--type", type};
    return tbtest::run_process(cli_, args + overrides);
  }

  // A one-layer random Llama 2-shaped model (no checkpoint) with `tokenizer` (a file) as its tokenizer.
  std::string writeTinyConfig(const std::string& name, int64_t vocab, const std::string& tokenizer,
                              const std::string& component = "tunebench.data.hf_tokenizer") {
    const std::string yaml = path(name + ".yaml");
    tbtest::write_file(yaml, "output_dir: " + path(name + "_out") + "\nmodel:\n  _component_: torchtune.models.llama2.llama2\n"
                                 "  vocab_size: " + std::to_string(vocab) + "\n  num_layers: 1\n  num_heads: 2\n"
                                 "  num_kv_heads: 1\n  embed_dim: 64\n  max_seq_len: 64\n"
                                 "tokenizer:\n  _component_: " + component + "\n  path: " + tokenizer + "\n"
                                 "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: null\n"
                                 "  model_type: LLAMA2\n  output_dir: " + path(name + "_out") + "\ndevice: cpu\ndtype: fp32\n");
    return yaml;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!cli_.isEmpty(), "TB_CLI is not set (ctest sets it)");
    QDir::setCurrent(QString::fromStdString(kSource));
  }

  // Round to nearest even, subnormals, overflow and NaN exactly as LibTorch's conversions round.
  void halfAndBfloat16RoundAsLibTorch() {
    std::vector<float> v = gaussian(20000, 1, 3.0f);
    const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f,
                              2.99e-8f, 6.1e-5f, 6.097e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1e30f,
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(), 3.3895e38f};
    v.insert(v.end(), std::begin(specials), std::end(specials));
    for (int i = 0; i < 2000; ++i) v.push_back(std::ldexp(gaussian(1, 100 + i)[0], -20 + i % 12));  // around 2^-14
    const auto t = torch::tensor(v);
    const auto half = t.to(torch::kHalf).contiguous();
    const auto bf = t.to(torch::kBFloat16).contiguous();
    for (size_t i = 0; i < v.size(); ++i) {
      uint16_t want_h, want_b;
      std::memcpy(&want_h, half.data_ptr<at::Half>() + i, 2);
      std::memcpy(&want_b, bf.data_ptr<at::BFloat16>() + i, 2);
      if (tb::quant::float_to_half(v[i]) != want_h)
        QFAIL(qPrintable(QString("half of %1: %2, LibTorch %3").arg(double(v[i]), 0, 'g', 9)
                             .arg(tb::quant::float_to_half(v[i]), 0, 16).arg(want_h, 0, 16)));
      QCOMPARE(tb::quant::float_to_bf16(v[i]), want_b);
      QCOMPARE(tb::quant::half_to_float(want_h), half.to(torch::kFloat)[static_cast<int64_t>(i)].item<float>());
    }
    QVERIFY(std::isnan(tb::quant::half_to_float(tb::quant::float_to_half(std::nanf("")))));
  }

  // q8_0 and q4_0 per element: the nearest code of a scale d = absmax / 127 (q8_0) or d = absmax / 8
  // (q4_0, whose positive end is one code short: up to a whole step) with d stored in fp16.
  void blockFormulasBoundEachElement() {
    const auto x = gaussian(32 * 512, 7);
    const auto y8 = round_trip(GgmlType::Q8_0, x), y4 = round_trip(GgmlType::Q4_0, x);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0, signed_max = 0;
      for (size_t j = 0; j < 32; ++j)
        if (std::fabs(x[32 * b + j]) > amax) {
          amax = std::fabs(x[32 * b + j]);
          signed_max = x[32 * b + j];
        }
      // Half a step, plus the codes times what storing the scale in fp16 moved it by.
      const float d8 = amax / 127, d4 = signed_max / -8;
      const auto stored = [](float d) { return tb::quant::half_to_float(tb::quant::float_to_half(d)); };
      const float bound8 = 0.5f * d8 + 127 * std::fabs(d8 - stored(d8)) + 1e-6f;
      const float bound4 = std::fabs(d4) + 8 * std::fabs(d4 - stored(d4)) + 1e-6f;
      for (size_t j = 0; j < 32; ++j) {
        const size_t i = 32 * b + j;
        QVERIFY2(std::fabs(x[i] - y8[i]) <= bound8, qPrintable(QString::number(i)));
        QVERIFY2(std::fabs(x[i] - y4[i]) <= bound4, qPrintable(QString::number(i)));
      }
    }
    // Values on the grid come back exactly: codes times a power-of-two scale.
    std::vector<float> grid(32);
    for (int j = 0; j < 32; ++j) grid[static_cast<size_t>(j)] = 0.25f * static_cast<float>((j * 7) % 255 - 127);
    QVERIFY(round_trip(GgmlType::Q8_0, grid) == grid);
    for (int j = 0; j < 32; ++j) grid[static_cast<size_t>(j)] = 0.5f * static_cast<float>(j % 16 - 8);
    grid[3] = -4.0f;  // the largest magnitude negative: d = -4 / -8 = 0.5
    QVERIFY(round_trip(GgmlType::Q4_0, grid) == grid);
  }

  // Every type on Gaussian rows: relative RMS error under what its bits allow, more bits less error,
  // zeros stay zeros, and a row whose length does not divide into blocks is refused.
  void everyBlockTypeRoundTrips() {
    const auto x = gaussian(256 * 64, 11);
    struct Case { GgmlType type; double bound; };
    const Case cases[] = {{GgmlType::F32, 0}, {GgmlType::F16, 6e-4}, {GgmlType::BF16, 4e-3},
                          {GgmlType::Q8_0, 6e-3}, {GgmlType::Q6_K, 2.5e-2}, {GgmlType::Q5_1, 4e-2},
                          {GgmlType::Q5_0, 4.5e-2}, {GgmlType::Q5_K, 4.5e-2}, {GgmlType::Q4_K, 9e-2},
                          {GgmlType::Q4_0, 1.1e-1}};
    std::map<GgmlType, double> err;
    for (const auto& c : cases) {
      err[c.type] = relative_rms_error(x, round_trip(c.type, x));
      qInfo("%s: relative RMS error %.5f", tb::quant::ggml_type_name(c.type), err[c.type]);
      QVERIFY2(err[c.type] <= c.bound, tb::quant::ggml_type_name(c.type));
      const std::vector<float> zeros(256, 0.0f);
      QVERIFY(round_trip(c.type, zeros) == zeros);
    }
    QVERIFY(err[GgmlType::Q8_0] < err[GgmlType::Q6_K] && err[GgmlType::Q6_K] < err[GgmlType::Q5_K] &&
            err[GgmlType::Q5_K] < err[GgmlType::Q4_K]);
    QVERIFY(err[GgmlType::Q5_0] < err[GgmlType::Q4_0]);
    // Scales span magnitudes: a row mixing 1e-3 and 1e3 blocks keeps each block's relative error.
    auto mixed = gaussian(512, 12);
    for (size_t i = 0; i < 256; ++i) mixed[i] *= 1e-3f;
    for (size_t i = 256; i < 512; ++i) mixed[i] *= 1e3f;
    const auto y = round_trip(GgmlType::Q4_K, mixed);
    QVERIFY(relative_rms_error({mixed.begin(), mixed.begin() + 256}, {y.begin(), y.begin() + 256}) < 0.1);
    std::vector<uint8_t> bytes;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tb::quant::quantize_row(GgmlType::Q4_K, x.data(), 128, bytes));
  }

  // The writer's bytes, read back: header, each metadata type, the tensor table, 32-byte alignment.
  void writerLayoutReadsBack() {
    tb::checkpoint::GgufMetadata kv;
    kv.set_string("general.architecture", "llama");
    kv.set_u32("llama.block_count", 4);
    kv.set_i32("test.i32", -5);
    kv.set_f32("test.f32", 0.5f);
    kv.set_bool("test.bool", true);
    kv.set_strings("test.strings", {"a", "", "\xe2\x96\x81x"});
    kv.set_f32s("test.f32s", {1.5f, -2.0f});
    kv.set_i32s("test.i32s", {1, 6, 3});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kv.set_u32("llama.block_count", 5));
    const auto row = gaussian(64, 3);
    std::vector<tb::checkpoint::GgufTensor> tensors(2);
    tensors[0] = {"a.weight", {64, 3}, GgmlType::F16, [&] {
                    std::vector<uint8_t> b;
                    for (int r = 0; r < 3; ++r) tb::quant::quantize_row(GgmlType::F16, row.data(), 64, b);
                    return b;
                  }};
    tensors[1] = {"b.weight", {5}, GgmlType::F32, [] { return std::vector<uint8_t>(20, 7); }};
    const std::string file = path("layout.gguf");
    std::vector<size_t> progress;
    const uint64_t size = tb::checkpoint::write_gguf(file, kv, tensors, [&](size_t done, size_t, uint64_t) { progress.push_back(done); });
    const std::string bytes = tbtest::read_file(file);
    QCOMPARE(uint64_t(bytes.size()), size);
    QCOMPARE(progress, (std::vector<size_t>{1, 2}));
    const auto f = tbtest::parse_gguf(bytes);
    QCOMPARE(f.version, 3u);
    QCOMPARE(f.key_order.front(), std::string("general.architecture"));
    QCOMPARE(f.kv.at("general.architecture").s(), std::string("llama"));
    QCOMPARE(f.kv.at("llama.block_count").type, 4u);
    QCOMPARE(f.kv.at("llama.block_count").u(), uint64_t(4));
    QCOMPARE(f.kv.at("test.i32").i(), int64_t(-5));
    QCOMPARE(f.kv.at("test.f32").f(), 0.5);
    QVERIFY(f.kv.at("test.bool").b());
    QCOMPARE(f.kv.at("test.strings").array.at(2).s(), std::string("\xe2\x96\x81x"));
    QCOMPARE(f.kv.at("test.f32s").array.at(1).f(), -2.0);
    QCOMPARE(f.kv.at("test.i32s").array_type, 5u);
    QCOMPARE(f.data_start % 32, uint64_t(0));
    QCOMPARE(f.tensor("a.weight").ne, (std::vector<uint64_t>{64, 3}));
    QCOMPARE(f.tensor("a.weight").type, 1u);
    QCOMPARE(f.tensor("b.weight").offset, uint64_t(384));  // 3 rows of 64 halves, padded to 32 bytes
    QCOMPARE(tb::quant::half_to_float(*reinterpret_cast<const uint16_t*>(f.data(f.tensor("a.weight")) + 128 + 2)),
             tb::quant::half_to_float(tb::quant::float_to_half(row[1])));
    QCOMPARE(uint8_t(f.data(f.tensor("b.weight"))[19]), uint8_t(7));

    // A tensor whose data comes out the wrong size: an error naming it, and no file.
    tensors[1].data = [] { return std::vector<uint8_t>(12); };
    const std::string bad = path("bad.gguf");
    try {
      tb::checkpoint::write_gguf(bad, kv, tensors);
      QFAIL("accepted 12 bytes for 20");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("b.weight") != std::string::npos, e.what());
    }
    QVERIFY(!std::filesystem::exists(bad));
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path().toStdString()))
      QVERIFY2(entry.path().filename().string().find("bad.gguf") == std::string::npos, entry.path().c_str());
  }

  // llama.cpp's quantizer on a Llama-2-7B-shaped model: the known counts of its Q4_K_M files (16 of the
  // 32 attn_v and ffn_down in q6_K), the output layer q6_K, and the fallbacks for short rows.
  void tensorTypesFollowLlamaQuantize() {
    using tb::exporting::file_type;
    using tb::exporting::gguf_tensor_type;
    tb::exporting::TensorTypeContext ctx{32, true};
    for (const char* type : {"q4_k_m", "q5_k_m"}) {
      const auto& ft = file_type(type);
      int v6 = 0, down6 = 0;
      for (int i = 0; i < 32; ++i) {
        const std::string blk = "blk." + std::to_string(i) + ".";
        v6 += gguf_tensor_type(blk + "attn_v.weight", {4096, 4096}, ft, ctx) == GgmlType::Q6_K;
        down6 += gguf_tensor_type(blk + "ffn_down.weight", {11008, 4096}, ft, ctx) == GgmlType::Q6_K;
        QCOMPARE(gguf_tensor_type(blk + "attn_q.weight", {4096, 4096}, ft, ctx), ft.base);
        QCOMPARE(gguf_tensor_type(blk + "ffn_norm.weight", {4096}, ft, ctx), GgmlType::F32);
      }
      QCOMPARE(v6, 16);
      QCOMPARE(down6, 16);
      QCOMPARE(gguf_tensor_type("blk.0.attn_v.weight", {4096, 4096}, ft, ctx), GgmlType::Q6_K);
      QCOMPARE(gguf_tensor_type("blk.4.attn_v.weight", {4096, 4096}, ft, ctx), ft.base);
      QCOMPARE(gguf_tensor_type("blk.6.attn_v.weight", {4096, 4096}, ft, ctx), GgmlType::Q6_K);
      QCOMPARE(gguf_tensor_type("output.weight", {4096, 32000}, ft, ctx), GgmlType::Q6_K);
      QCOMPARE(gguf_tensor_type("token_embd.weight", {4096, 32000}, ft, ctx), ft.base);
    }
    QCOMPARE(gguf_tensor_type("output.weight", {4096, 32000}, file_type("q4_0"), ctx), GgmlType::Q6_K);
    QCOMPARE(gguf_tensor_type("output.weight", {4096, 32000}, file_type("q8_0"), ctx), GgmlType::Q8_0);
    QCOMPARE(gguf_tensor_type("token_embd.weight", {4096, 32000}, file_type("q4_0"), {32, false}), GgmlType::Q6_K);
    QCOMPARE(gguf_tensor_type("output.weight", {128, 2048}, file_type("q4_0"), ctx), GgmlType::Q8_0);
    QCOMPARE(gguf_tensor_type("blk.9.attn_q.weight", {128, 128}, file_type("q4_k_m"), ctx), GgmlType::Q5_0);
    QCOMPARE(gguf_tensor_type("blk.9.attn_q.weight", {128, 128}, file_type("q5_k_m"), ctx), GgmlType::Q5_1);
    QCOMPARE(gguf_tensor_type("blk.9.attn_q.weight", {128, 128}, file_type("q6_k"), ctx), GgmlType::Q8_0);
    QCOMPARE(gguf_tensor_type("blk.9.attn_q.weight", {48, 128}, file_type("q4_k_m"), ctx), GgmlType::F16);
    QCOMPARE(gguf_tensor_type("blk.9.attn_q.weight", {4096, 4096}, file_type("bf16"), ctx), GgmlType::BF16);
    QCOMPARE(gguf_tensor_type("token_embd.weight", {4096, 32000}, file_type("f16"), ctx), GgmlType::F16);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, file_type("q3_k_s"));
  }

  // The bundled base model in f32: llama.cpp's names and shapes, every weight equal to the safetensors
  // one (q and k rows permuted as llama.cpp's converter permutes them), the architecture keys from
  // config.json and the SentencePiece vocabulary.
  void exportsTheBaseModel() {
    const std::string out = path("base_f32.gguf");
    const auto r = exportModel("configs/tiny/eval_stories.yaml", out, "f32");
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto result = nlohmann::json::parse(tbtest::last_line(r.out).toStdString());
    const auto f = tbtest::parse_gguf(tbtest::read_file(out));
    QCOMPARE(result["bytes"].get<uint64_t>(), uint64_t(f.bytes.size()));
    QCOMPARE(result["parameters"].get<int64_t>(), int64_t(1311872));
    QCOMPARE(f.tensors.size(), size_t(39));
    const auto config = nlohmann::json::parse(tbtest::read_file(kBaseModel + "/config.json"));
    QCOMPARE(f.kv.at("general.architecture").s(), std::string("llama"));
    QCOMPARE(f.kv.at("general.file_type").u(), uint64_t(0));
    QCOMPARE(f.kv.at("llama.block_count").u(), config["num_hidden_layers"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.embedding_length").u(), config["hidden_size"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.feed_forward_length").u(), config["intermediate_size"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.attention.head_count").u(), config["num_attention_heads"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.attention.head_count_kv").u(), config["num_key_value_heads"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.context_length").u(), config["max_position_embeddings"].get<uint64_t>());
    QCOMPARE(f.kv.at("llama.rope.dimension_count").u(), config["head_dim"].get<uint64_t>());
    QCOMPARE(float(f.kv.at("llama.attention.layer_norm_rms_epsilon").f()), float(config["rms_norm_eps"].get<double>()));
    QCOMPARE(f.kv.at("llama.rope.freq_base").f(), config["rope_theta"].get<double>());

    const auto& tokens = f.kv.at("tokenizer.ggml.tokens").array;
    const auto& types = f.kv.at("tokenizer.ggml.token_type").array;
    const auto& scores = f.kv.at("tokenizer.ggml.scores").array;
    QCOMPARE(tokens.size(), size_t(2048));
    QCOMPARE(tokens[0].s(), std::string("<unk>"));
    QCOMPARE(types[0].i(), int64_t(2));
    QCOMPARE(tokens[1].s(), std::string("<s>"));
    QCOMPARE(types[1].i(), int64_t(3));
    QCOMPARE(f.kv.at("tokenizer.ggml.bos_token_id").u(), uint64_t(1));
    QCOMPARE(f.kv.at("tokenizer.ggml.eos_token_id").u(), uint64_t(2));
    QCOMPARE(f.kv.at("tokenizer.ggml.model").s(), std::string("llama"));
    QVERIFY(f.kv.at("tokenizer.ggml.add_space_prefix").b());
    int bytes = 0;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].s() == "<0x0A>") {
        QCOMPARE(types[i].i(), int64_t(6));
        ++bytes;
      }
    QCOMPARE(bytes, 1);
    QVERIFY(scores[500].f() > scores[1500].f());  // BPE pieces: earlier merges score higher

    const auto hf = tb::checkpoint::load_safetensors(kBaseModel + "/model.safetensors");
    QVERIFY(torch::equal(f32_tensor(f, "token_embd.weight"), hf.at("model.embed_tokens.weight")));
    QVERIFY(torch::equal(f32_tensor(f, "output.weight"), hf.at("lm_head.weight")));
    QVERIFY(torch::equal(f32_tensor(f, "output_norm.weight"), hf.at("model.norm.weight")));
    QCOMPARE(f.tensor("token_embd.weight").ne, (std::vector<uint64_t>{128, 2048}));
    for (int i = 0; i < 4; ++i) {
      const std::string blk = "blk." + std::to_string(i) + ".", layer = "model.layers." + std::to_string(i) + ".";
      QVERIFY(torch::equal(f32_tensor(f, blk + "attn_q.weight"), llama_cpp_permute(hf.at(layer + "self_attn.q_proj.weight"), 4)));
      QVERIFY(torch::equal(f32_tensor(f, blk + "attn_k.weight"), llama_cpp_permute(hf.at(layer + "self_attn.k_proj.weight"), 2)));
      QVERIFY(torch::equal(f32_tensor(f, blk + "attn_v.weight"), hf.at(layer + "self_attn.v_proj.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "attn_output.weight"), hf.at(layer + "self_attn.o_proj.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "ffn_gate.weight"), hf.at(layer + "mlp.gate_proj.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "ffn_up.weight"), hf.at(layer + "mlp.up_proj.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "ffn_down.weight"), hf.at(layer + "mlp.down_proj.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "attn_norm.weight"), hf.at(layer + "input_layernorm.weight")));
      QVERIFY(torch::equal(f32_tensor(f, blk + "ffn_norm.weight"), hf.at(layer + "post_attention_layernorm.weight")));
    }

    // f16: matrices in half, norms in f32, the file type llama.cpp reads.
    const std::string half = path("base_f16.gguf");
    QVERIFY(exportModel("configs/tiny/eval_stories.yaml", half, "f16").code == 0);
    const auto h = tbtest::parse_gguf(tbtest::read_file(half));
    QCOMPARE(h.kv.at("general.file_type").u(), uint64_t(1));
    QCOMPARE(h.tensor("blk.2.ffn_down.weight").type, 1u);
    QCOMPARE(h.tensor("blk.2.ffn_norm.weight").type, 0u);
  }

  // A LoRA config with an adapter (checkpointer.adapter_checkpoint): the file holds W + alpha/r * B A.
  void mergesALoraAdapter() {
    const std::string adapter_dir = path("adapter");
    const auto adapter = tbtest::write_random_tiny_lora_adapter(adapter_dir, 5);
    const std::string out = path("lora_f32.gguf");
    const auto r = exportModel("configs/tiny/lora_single_device.yaml", out, "f32",
                               {QString::fromStdString("checkpointer.adapter_checkpoint=" + adapter_dir)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(nlohmann::json::parse(tbtest::last_line(r.out).toStdString())["merged_lora"].get<bool>());
    const auto f = tbtest::parse_gguf(tbtest::read_file(out));
    QCOMPARE(f.tensors.size(), size_t(39));  // no adapter tensors of their own
    const auto hf = tb::checkpoint::load_safetensors(kBaseModel + "/model.safetensors");
    // Ours are torchtune's layout (pairs 2i, 2i+1), which is llama.cpp's: B A adds as it is.
    const auto delta = [&](const std::string& m) {
      return 2.0 * torch::matmul(adapter.at("layers.1." + m + ".lora_b.weight"), adapter.at("layers.1." + m + ".lora_a.weight"));
    };
    const auto q = llama_cpp_permute(hf.at("model.layers.1.self_attn.q_proj.weight"), 4) + delta("attn.q_proj");
    QVERIFY(torch::allclose(f32_tensor(f, "blk.1.attn_q.weight"), q, 1e-5, 1e-6));
    const auto down = hf.at("model.layers.1.mlp.down_proj.weight") + delta("mlp.w2");
    QVERIFY(torch::allclose(f32_tensor(f, "blk.1.ffn_down.weight"), down, 1e-5, 1e-6));
    QVERIFY(!torch::allclose(f32_tensor(f, "blk.1.ffn_down.weight"), hf.at("model.layers.1.mlp.down_proj.weight"), 1e-3, 1e-4));
  }

  // --ollama: a Modelfile beside the file, FROM it, stopping at the turn's end token, with the system
  // prompt the chat template writes when a conversation has none (Qwen2.5's); the GGUF carries the template.
  void writesAnOllamaModelfile() {
    const std::string folder = path("qwen_folder");
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(kSource + "/tests/data/tokenizers/qwen/tokenizer.json", folder + "/tokenizer.json");
    std::filesystem::copy_file(kSource + "/tests/data/chat_templates/qwen2.5.jinja", folder + "/chat_template.jinja");
    tbtest::write_file(folder + "/tokenizer_config.json",
                       R"({"bos_token": null, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"})");
    tbtest::write_file(folder + "/config.json",
                       nlohmann::json{{"model_type", "qwen2"}, {"hidden_size", 64}, {"intermediate_size", 128},
                                      {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"num_hidden_layers", 1},
                                      {"vocab_size", 1920}, {"max_position_embeddings", 128},
                                      {"tie_word_embeddings", true}, {"rope_theta", 1000000.0}}.dump());
    const std::string yaml = path("qwen.yaml");
    tbtest::write_file(yaml, "output_dir: " + path("qwen_out") + "\nmodel:\n  _component_: tunebench.models.from_hf_config\n  path: " +
                                 folder + "\ntokenizer:\n  _component_: tunebench.data.hf_tokenizer\n  path: " + folder +
                                 "\ncheckpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: null\n"
                                 "  model_type: QWEN2\n  output_dir: " + path("qwen_out") + "\ndevice: cpu\ndtype: fp32\n");
    const std::string out = path("ollama/qwen-tiny.gguf");
    std::filesystem::create_directories(path("ollama"));
    const auto r = tbtest::run_process(cli_, {"export", "gguf", "--config", QString::fromStdString(yaml), "--output",
                                              QString::fromStdString(out), "--type", "q8_0", "--ollama"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::string modelfile = tbtest::read_file(path("ollama/Modelfile"));
    QVERIFY2(modelfile.find("\nFROM ./qwen-tiny.gguf\n") != std::string::npos, modelfile.c_str());
    QVERIFY2(modelfile.find("\nPARAMETER stop \"<|im_end|>\"\n") != std::string::npos, modelfile.c_str());
    QVERIFY2(modelfile.find("\nSYSTEM \"\"\"You are Qwen, created by Alibaba Cloud. You are a helpful assistant.\"\"\"\n") !=
                 std::string::npos, modelfile.c_str());
    const auto f = tbtest::parse_gguf(tbtest::read_file(out));
    QCOMPARE(f.kv.at("tokenizer.chat_template").s(), tbtest::read_file(kSource + "/tests/data/chat_templates/qwen2.5.jinja"));
    QCOMPARE(f.kv.at("general.architecture").s(), std::string("qwen2"));
    QVERIFY(f.kv.count("tokenizer.ggml.bos_token_id") == 0);
    QVERIFY(!f.kv.at("tokenizer.ggml.add_bos_token").b());
    QVERIFY_THROWS_NO_EXCEPTION(f.tensor("blk.0.attn_q.bias"));
    QCOMPARE(f.tensor("blk.0.attn_q.bias").type, 0u);  // 1-D: f32
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, f.tensor("output.weight"));  // tied: llama.cpp uses token_embd

    // Templates without a default system prompt give none; one that refuses a system message too.
    tb::data::ChatTemplate smol(tbtest::read_file(kSource + "/tests/data/chat_templates/smollm2.jinja"), "smollm2");
    QCOMPARE(tb::exporting::default_system_prompt(smol).value_or(""),
             std::string("You are a helpful AI assistant named SmolLM, trained by Hugging Face"));
    tb::data::ChatTemplate llama(tbtest::read_file(kSource + "/tests/data/chat_templates/llama3.2.jinja"), "llama3.2");
    // Llama 3.2 writes its knowledge cutoff and date before any system text, with or without one: no default.
    QVERIFY(!tb::exporting::default_system_prompt(llama).has_value());
    tb::data::ChatTemplate plain("{% for m in messages %}{{ m.content }}{% endfor %}", "plain");
    QVERIFY(!tb::exporting::default_system_prompt(plain).has_value());

    // Ollama's parser takes quoted values as they stand (no escapes): quotes and backslashes stay raw,
    // several lines go in triple quotes, a triple quote cannot be written.
    const std::string text = tb::exporting::modelfile_text({"./m.gguf", {"say \"x\"", "a\\b"}, std::string("one\ntwo")});
    QVERIFY2(text.find("\nPARAMETER stop \"say \"x\"\"\n") != std::string::npos, text.c_str());
    QVERIFY2(text.find("\nPARAMETER stop \"a\\b\"\n") != std::string::npos, text.c_str());
    QVERIFY2(text.find("\nSYSTEM \"\"\"one\ntwo\"\"\"\n") != std::string::npos, text.c_str());
    const std::string bad = tb::exporting::modelfile_text({"./m.gguf", {}, std::string("a \"\"\" b")});
    QVERIFY2(bad.find("SYSTEM") == std::string::npos || bad.find("\nSYSTEM") == std::string::npos, bad.c_str());

    // A model trained on alpaca_dataset, without a chat template: Ollama gets the Alpaca format as TEMPLATE.
    const std::string alpaca = path("ollama-alpaca/tiny.gguf");
    std::filesystem::create_directories(path("ollama-alpaca"));
    const auto a = tbtest::run_process(cli_, {"export", "gguf", "--config", "tiny/full_single_device", "--output",
                                              QString::fromStdString(alpaca), "--type", "f16", "--ollama"});
    QVERIFY2(a.code == 0, qPrintable(a.err));
    const std::string alpaca_file = tbtest::read_file(path("ollama-alpaca/Modelfile"));
    QVERIFY2(alpaca_file.find("\nTEMPLATE \"\"\"Below is an instruction that describes a task.") != std::string::npos &&
                 alpaca_file.find("### Instruction:\n{{ .Prompt }}\n\n### Response:\n{{ .Response }}\"\"\"\n") !=
                     std::string::npos,
             alpaca_file.c_str());
  }

  // A tokenizer.json that is not byte-level (Gemma's style) is written from the tokenizer.model beside it
  // (a tokenizer.model of another size is refused: not the same vocabulary); without one, from the
  // tokenizer.json itself as a SentencePiece vocabulary whose scores follow the merge ranks (llama.cpp
  // merges the pair whose joined piece scores highest). The scores are checked against the ranks read from
  // the file here; llama.cpp's own split of a real Gemma 3 file is test_gguf_llama_cpp's.
  void sentencePieceStyleTokenizerJson() {
    const std::string folder = path("spm_json");
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(kSource + "/tests/data/tokenizers/gemma/tokenizer.json", folder + "/tokenizer.json");
    const auto json = nlohmann::json::parse(tbtest::read_file(folder + "/tokenizer.json"));
    const auto vocab = json["model"]["vocab"].size();
    const std::string yaml = writeTinyConfig("spm_json", int64_t(vocab) + 64, folder + "/tokenizer.json");
    auto r = exportModel(QString::fromStdString(yaml), path("spm_json.gguf"), "f16");
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto f = tbtest::parse_gguf(tbtest::read_file(path("spm_json.gguf")));
    QCOMPARE(f.kv.at("tokenizer.ggml.model").s(), std::string("llama"));
    QCOMPARE(f.kv.at("tokenizer.ggml.add_space_prefix").b(), false);  // Gemma prepends no "▁"
    const auto& tokens = f.kv.at("tokenizer.ggml.tokens").array;
    const auto& scores = f.kv.at("tokenizer.ggml.scores").array;
    const auto& types = f.kv.at("tokenizer.ggml.token_type").array;
    QCOMPARE(tokens.size(), vocab + 64);
    std::map<std::string, size_t> first_rank;
    const auto& merges = json["model"]["merges"];
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& m = merges[rank];
      const std::string joined = m.is_string() ? std::string(m.get<std::string>()).erase(m.get<std::string>().find(' '), 1)
                                               : m[0].get<std::string>() + m[1].get<std::string>();
      first_rank.emplace(joined, rank);
    }
    size_t checked = 0;
    for (const auto& [piece, id] : json["model"]["vocab"].items()) {
      const auto it = first_rank.find(piece);
      if (it == first_rank.end()) continue;
      QCOMPARE(tokens[id.get<size_t>()].s(), piece);
      QCOMPARE(scores[id.get<size_t>()].f(), double(-float(it->second)));
      ++checked;
    }
    QVERIFY(checked > 1000);
    QCOMPARE(types[json["model"]["vocab"]["<0x0A>"].get<size_t>()].i(), int64_t(6));  // byte
    QCOMPARE(types[json["model"]["vocab"]["<unk>"].get<size_t>()].i(), int64_t(2));   // unknown
    QCOMPARE(types[vocab + 10].i(), int64_t(5));  // padding past the vocabulary: unused
    // With a tokenizer.model of another size beside it: refused.
    std::filesystem::copy_file(kSource + "/resources/tokenizer/tokenizer.model", folder + "/tokenizer.model");
    r = exportModel(QString::fromStdString(yaml), path("spm_json2.gguf"), "f16");
    if (vocab != 2048) {
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.contains("not the same vocabulary"), qPrintable(r.err));
    }
  }

  // The pre-tokenizer name is found from how the tokenizer splits text, not from its family: a Llama 3
  // tokenizer.json whose number rule is changed (1-4 digits, which no llama.cpp name does) or which
  // lowercases first is refused, naming what llama.cpp knows; the unchanged one is llama-bpe.
  void byteLevelSplitLlamaCppHasNoNameForIsRefused_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unchanged") << "" << "" << "llama-bpe";
    QTest::newRow("four digits") << "\\\\p{N}{1,3}" << "\\\\p{N}{1,4}" << "";
    QTest::newRow("lowercased") << "\"normalizer\": null" << "\"normalizer\": {\"type\": \"Lowercase\"}" << "";
  }
  void byteLevelSplitLlamaCppHasNoNameForIsRefused() {
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, expected);
    const std::string tag = QTest::currentDataTag(), folder = path("split_" + std::to_string(std::hash<std::string>{}(tag)));
    std::filesystem::create_directories(folder);
    std::string text = tbtest::read_file(kSource + "/tests/data/tokenizers/llama3/tokenizer.json");
    if (!from.isEmpty()) {
      const auto at = text.find(from.toStdString());
      QVERIFY2(at != std::string::npos, qPrintable(from));
      text.replace(at, from.size(), to.toStdString());
    }
    tbtest::write_file(folder + "/tokenizer.json", text);
    const int64_t vocab = 128 * ((nlohmann::json::parse(text)["added_tokens"].back()["id"].get<int64_t>() + 128) / 128);
    const std::string yaml = writeTinyConfig("split_" + std::to_string(std::hash<std::string>{}(tag)), vocab, folder + "/tokenizer.json");
    const auto r = exportModel(QString::fromStdString(yaml), folder + "/out.gguf", "f16");
    if (expected.isEmpty()) {
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.contains("llama.cpp has no pre-tokenizer that splits text as this tokenizer does") &&
                   r.err.contains("llama-bpe (Llama 3)") && r.err.contains("qwen2"),
               qPrintable(r.err));
      QVERIFY(!std::filesystem::exists(folder + "/out.gguf"));
    } else {
      QVERIFY2(r.code == 0, qPrintable(r.err));
      QCOMPARE(QString::fromStdString(tbtest::parse_gguf(tbtest::read_file(folder + "/out.gguf")).kv.at("tokenizer.ggml.pre").s()), expected);
    }
  }

  // SentencePiece models from spm_train: without byte pieces (byte_fallback off) llama.cpp cannot load the
  // vocabulary, so the export refuses; one that collapses runs of spaces (remove_extra_whitespaces, the
  // trainer's default) exports with a warning; Llama 2's settings (the bundled model) export without one.
  void sentencePieceModelsLlamaCppCannotMatch() {
    const std::string corpus = path("spm_corpus.txt");
    tbtest::write_file(corpus, tbtest::read_file(kSource + "/resources/corpus/tunebench_stories.txt").substr(0, 200000));
    const auto train = [&](const std::string& name, const QStringList& flags) {
      const auto r = tbtest::run_process("spm_train", QStringList{QString::fromStdString("--input=" + corpus),
                                                                  QString::fromStdString("--model_prefix=" + path(name)),
                                                                  "--model_type=bpe", "--vocab_size=400", "--num_threads=1",
                                                                  "--minloglevel=2"} + flags);
      if (r.code != 0) throw std::runtime_error("spm_train: " + r.err.toStdString());
      return path(name) + ".model";
    };
    const auto export_with = [&](const std::string& name, const std::string& model, int64_t vocab) {
      return exportModel(QString::fromStdString(writeTinyConfig(name, vocab, model, "torchtune.models.llama2.llama2_tokenizer")),
                         path(name + ".gguf"), "f16");
    };
    auto r = export_with("no_bytes", train("no_bytes", {"--byte_fallback=false"}), 448);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("lacks 256 of the 256 byte pieces (<0x00>, ...)") && r.err.contains("byte_fallback"), qPrintable(r.err));
    QVERIFY(!std::filesystem::exists(path("no_bytes.gguf")));
    r = export_with("collapsing", train("collapsing", {"--byte_fallback=true"}), 448);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("export: warning: this tokenizer.model collapses runs of spaces"), qPrintable(r.err));
    r = export_with("llama2_style", kSource + "/resources/tokenizer/tokenizer.model", 2048);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
  }

  // Refusals: an unknown type names the accepted ones; a folder that does not exist leaves nothing.
  void refusesBadRequests() {
    auto r = exportModel("configs/tiny/eval_stories.yaml", path("x.gguf"), "q3_k");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("q4_k_m"), qPrintable(r.err));
    r = exportModel("configs/tiny/eval_stories.yaml", path("missing/dir/x.gguf"), "f16");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("missing/dir"), qPrintable(r.err));
    QVERIFY(!std::filesystem::exists(path("missing")));
  }
};

TB_TEST(TestGguf)
#include "test_gguf.moc"
