// LoRA building blocks: LoRALinear against values worked out by hand, which parameters train, the
// merge W + (alpha/rank) B A, PEFT's names and rotary layout for adapters (checked against merging in
// Hugging Face space), the adapter_model.safetensors + adapter_config.json round trip, and the key
// checks of a LoRA model's checkpoint load.
#include <QtTest>

#include "test_main.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "models/build_dtype.h"
#include "models/transformer.h"
#include "peft/adapter.h"
#include "peft/lora_builders.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "quant/nf4.h"

using namespace tb;
using tb::peft::StateDict;

namespace {

// 1 or 2 layers, 2 query heads sharing 1 kv head, head_dim 4: q_proj [8, 8], k_proj/v_proj [4, 8].
models::ModelArgs tiny_args(int64_t layers = 1) {
  models::ModelArgs a;
  a.vocab_size = 16;
  a.num_layers = layers;
  a.num_heads = 2;
  a.num_kv_heads = 1;
  a.embed_dim = 8;
  a.intermediate_dim = 12;
  a.max_seq_len = 16;
  return a;
}

template <class F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

#define EXPECT_ERROR_CONTAINS(call, ...)                                                  \
  do {                                                                                    \
    const QString _msg = error_of([&] { call; });                                         \
    QVERIFY2(!_msg.isEmpty(), #call " did not throw");                                    \
    for (const QString& _part : QStringList{__VA_ARGS__})                                 \
      QVERIFY2(_msg.contains(_part), qPrintable("'" + _msg + "' lacks '" + _part + "'")); \
  } while (0)

std::set<std::string> keys_of(const StateDict& d) {
  std::set<std::string> out;
  for (const auto& kv : d) out.insert(kv.first);
  return out;
}

std::set<std::string> parameter_names(const torch::nn::Module& m) {
  std::set<std::string> out;
  for (const auto& item : m.named_parameters()) out.insert(item.key());
  return out;
}

void set_tensor(torch::Tensor& param, const torch::Tensor& value) {
  torch::NoGradGuard no_grad;
  param.copy_(value);
}

// Writes adapter_config.json by hand (for load tests that do not go through save_peft_adapter).
void write_text(const QString& path, const QString& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(text.toUtf8());
}

// A stand-in for a compiled model: the real one under `_orig_mod`, plus a plain linear.
struct ToyModelImpl : torch::nn::Module {
  ToyModelImpl() {
    proj = register_module("proj", peft::LoRALinear(5, 3, 2, 4.0));
    other = register_module("other", torch::nn::Linear(torch::nn::LinearOptions(3, 3).bias(false)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return other->forward(proj->forward(x)); }
  peft::LoRALinear proj{nullptr};
  torch::nn::Linear other{nullptr};
};
TORCH_MODULE(ToyModel);

struct CompiledWrapperImpl : torch::nn::Module {
  CompiledWrapperImpl() { inner = register_module("_orig_mod", ToyModel()); }
  ToyModel inner{nullptr};
};
TORCH_MODULE(CompiledWrapper);

}  // namespace

class TestLora : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { torch::manual_seed(1234); }

  void outputEqualsBaseAtInit() {
    peft::LoRALinear lora(5, 3, 2, 4.0);
    const auto x = torch::randn({2, 3, 5});
    const auto y = lora->forward(x);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{2, 3, 3}));
    // x W^T by broadcasting and summing, not a matmul: y[b,t,o] = sum_i x[b,t,i] W[o,i].
    const auto expected = (x.unsqueeze(-2) * lora->weight).sum(-1);
    QVERIFY(torch::allclose(y, expected, 1e-5, 1e-6));
  }

  void parameterNamesShapesAndInit() {
    peft::LoRALinear lora(5, 3, 2, 4.0);
    QCOMPARE(parameter_names(*lora), (std::set<std::string>{"weight", "lora_a.weight", "lora_b.weight"}));
    const auto params = lora->named_parameters();
    QCOMPARE(params["weight"].sizes().vec(), (std::vector<int64_t>{3, 5}));
    QCOMPARE(params["lora_a.weight"].sizes().vec(), (std::vector<int64_t>{2, 5}));
    QCOMPARE(params["lora_b.weight"].sizes().vec(), (std::vector<int64_t>{3, 2}));
    QVERIFY(!params["weight"].requires_grad());
    QVERIFY(lora->named_buffers().is_empty());
    // Kaiming-uniform with a = sqrt(5): gain sqrt(2/6), bound sqrt(3) * gain / sqrt(fan_in) = 1/sqrt(5).
    const auto a = params["lora_a.weight"];
    QVERIFY(a.abs().max().item<double>() <= 1.0 / std::sqrt(5.0) + 1e-7);
    QVERIFY(a.abs().min().item<double>() > 0.0);
    QVERIFY(params["lora_b.weight"].eq(0).all().item<bool>());
    QCOMPARE(lora->rank(), int64_t(2));
    QCOMPARE(lora->scale(), 2.0);
  }

  void rejectsBadArguments() {
    EXPECT_ERROR_CONTAINS(peft::LoRALinear(4, 4, 0, 1.0), "rank");
    EXPECT_ERROR_CONTAINS(peft::LoRALinear(4, 4, 2, 1.0, 1.0), "dropout");
  }

  void handComputedForward() {
    // W = [[1, 2], [3, 4]], A = [[1, -1]], B = [[2], [0.5]], alpha 2, rank 1 -> scale 2.
    // x = [1, 3]: W x = [7, 15]; A x = -2; B (A x) = [-4, -1]; times 2 = [-8, -2]; y = [-1, 13].
    // x = [2, 0]: W x = [2, 6];  A x = 2;  B (A x) = [4, 1];   times 2 = [8, 2];   y = [10, 8].
    peft::LoRALinear lora(2, 2, 1, 2.0);
    set_tensor(lora->weight, torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2}));
    set_tensor(lora->lora_a->weight, torch::tensor({1.0f, -1.0f}).reshape({1, 2}));
    set_tensor(lora->lora_b->weight, torch::tensor({2.0f, 0.5f}).reshape({2, 1}));
    QCOMPARE(lora->scale(), 2.0);
    const auto y = lora->forward(torch::tensor({1.0f, 3.0f, 2.0f, 0.0f}).reshape({2, 2}));
    QVERIFY(torch::equal(y, torch::tensor({-1.0f, 13.0f, 10.0f, 8.0f}).reshape({2, 2})));
  }

  void baseForwardHookReplacesWeight() {
    peft::LoRALinear lora(2, 2, 1, 2.0);
    set_tensor(lora->weight, torch::full({2, 2}, std::nanf("")));  // must not be read
    set_tensor(lora->lora_a->weight, torch::tensor({1.0f, -1.0f}).reshape({1, 2}));
    set_tensor(lora->lora_b->weight, torch::tensor({2.0f, 0.5f}).reshape({2, 1}));
    // A stand-in for x @ dequant(W)^T with W = [[1, 2], [3, 4]]: 2x2 matmul written out.
    lora->base_forward = [](const torch::Tensor& x) {
      const auto x0 = x.select(-1, 0), x1 = x.select(-1, 1);
      return torch::stack({x0 + 2 * x1, 3 * x0 + 4 * x1}, -1);
    };
    const auto y = lora->forward(torch::tensor({1.0f, 3.0f}).reshape({1, 2}));
    QVERIFY(torch::equal(y, torch::tensor({-1.0f, 13.0f}).reshape({1, 2})));
  }

  void dropoutOnlyOnTheLoraPath() {
    peft::LoRALinear lora(6, 4, 2, 2.0, 0.5);
    const auto x = torch::randn({8, 6});
    const auto base = (x.unsqueeze(-2) * lora->weight).sum(-1);
    lora->train();
    // lora_b = 0: whatever dropout does to the LoRA input, the base path is untouched.
    QVERIFY(torch::allclose(lora->forward(x), base, 1e-5, 1e-6));
    set_tensor(lora->lora_b->weight, torch::randn({4, 2}));
    const auto lora_term = 1.0 * (x.matmul(lora->lora_a->weight.t())).matmul(lora->lora_b->weight.t());
    lora->eval();
    QVERIFY(torch::allclose(lora->forward(x), base + lora_term, 1e-5, 1e-5));
    lora->train();
    QVERIFY(!torch::allclose(lora->forward(x), base + lora_term, 1e-5, 1e-5));
  }

  void isAdapterParameter_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("adapter");
    QTest::newRow("q lora_a") << "layers.0.attn.q_proj.lora_a.weight" << true;
    QTest::newRow("output lora_b") << "output.lora_b.weight" << true;
    QTest::newRow("bare module") << "lora_a.weight" << true;
    QTest::newRow("compiled") << "_orig_mod.layers.1.mlp.w2.lora_b.weight" << true;
    QTest::newRow("base weight") << "layers.0.attn.q_proj.weight" << false;
    QTest::newRow("norm") << "layers.0.sa_norm.scale" << false;
    QTest::newRow("not a segment") << "layers.0.attn.xlora_a.weight" << false;
    QTest::newRow("longer segment") << "layers.0.attn.lora_ab.weight" << false;
  }
  void isAdapterParameter() {
    QFETCH(QString, name);
    QFETCH(bool, adapter);
    QCOMPARE(peft::is_adapter_parameter(name.toStdString()), adapter);
  }

  void onlyAdaptersTrain() {
    CompiledWrapper model;
    for (auto& p : model->parameters()) p.set_requires_grad(true);
    peft::set_trainable_params(*model);
    std::set<std::string> trainable;
    for (const auto& item : model->named_parameters())
      if (item.value().requires_grad()) trainable.insert(item.key());
    QCOMPARE(trainable, (std::set<std::string>{"_orig_mod.proj.lora_a.weight", "_orig_mod.proj.lora_b.weight"}));

    const auto x = torch::randn({4, 5});
    model->inner->proj->forward(x).sum().backward();
    auto& proj = *model->inner->proj;
    QVERIFY(!proj.weight.grad().defined());
    QVERIFY(!model->inner->other->weight.grad().defined());
    // d/dB sum(s B A x_n) = s * sum_n (A x_n) for every output row; lora_a gets B^T (...) = 0 as B = 0.
    const auto ax_sum = (x.unsqueeze(-2) * proj.lora_a->weight).sum(-1).sum(0);  // [rank]
    const auto expected_grad_b = (proj.scale() * ax_sum).expand({3, 2});
    QVERIFY(torch::allclose(proj.lora_b->weight.grad(), expected_grad_b, 1e-5, 1e-6));
    QVERIFY(proj.lora_a->weight.grad().eq(0).all().item<bool>());
  }

  void adapterStateDictStripsCompiledPrefix() {
    CompiledWrapper model;
    const StateDict adapter = peft::adapter_state_dict(*model);
    QCOMPARE(keys_of(adapter), (std::set<std::string>{"proj.lora_a.weight", "proj.lora_b.weight"}));
    QCOMPARE(adapter.at("proj.lora_a.weight").data_ptr(), model->inner->proj->lora_a->weight.data_ptr());
    QVERIFY(!adapter.at("proj.lora_a.weight").requires_grad());
  }

  void mergeByHand() {
    // B A = [[2, -2], [0.5, -0.5]]; times alpha/rank = 2: [[4, -4], [1, -1]]; plus W = [[5, -2], [4, 3]].
    const StateDict base = {{"layers.0.attn.q_proj.weight", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2})},
                            {"norm.scale", torch::tensor({7.0f})}};
    const StateDict adapter = {{"layers.0.attn.q_proj.lora_a.weight", torch::tensor({1.0f, -1.0f}).reshape({1, 2})},
                               {"layers.0.attn.q_proj.lora_b.weight", torch::tensor({2.0f, 0.5f}).reshape({2, 1})}};
    const StateDict merged = peft::merge_lora(base, adapter, 2.0, 1);
    QCOMPARE(keys_of(merged), keys_of(base));
    QVERIFY(torch::equal(merged.at("layers.0.attn.q_proj.weight"),
                         torch::tensor({5.0f, -2.0f, 4.0f, 3.0f}).reshape({2, 2})));
    QCOMPARE(merged.at("norm.scale").data_ptr(), base.at("norm.scale").data_ptr());

    // bf16 base (all values exact in bf16): merged in fp32, returned in bf16.
    StateDict base16 = base;
    base16["layers.0.attn.q_proj.weight"] = base.at("layers.0.attn.q_proj.weight").to(torch::kBFloat16);
    const auto w16 = peft::merge_lora(base16, adapter, 2.0, 1).at("layers.0.attn.q_proj.weight");
    QCOMPARE(w16.scalar_type(), torch::kBFloat16);
    QVERIFY(torch::equal(w16.to(torch::kFloat), torch::tensor({5.0f, -2.0f, 4.0f, 3.0f}).reshape({2, 2})));
  }

  void mergeDropsAdapterKeysAndChecksBase() {
    StateDict base = {{"layers.0.attn.v_proj.weight", torch::zeros({2, 2})},
                      {"layers.0.attn.v_proj.lora_a.weight", torch::zeros({1, 2})}};
    const StateDict adapter = {{"layers.0.attn.q_proj.lora_a.weight", torch::zeros({1, 2})},
                               {"layers.0.attn.q_proj.lora_b.weight", torch::zeros({2, 1})}};
    EXPECT_ERROR_CONTAINS(peft::merge_lora(base, adapter, 2.0, 1), "layers.0.attn.q_proj.weight");
    base["layers.0.attn.q_proj.weight"] = torch::zeros({2, 2});
    QCOMPARE(keys_of(peft::merge_lora(base, adapter, 2.0, 1)),
             (std::set<std::string>{"layers.0.attn.q_proj.weight", "layers.0.attn.v_proj.weight"}));
    const StateDict half = {{"layers.0.attn.q_proj.lora_a.weight", torch::zeros({1, 2})}};
    EXPECT_ERROR_CONTAINS(peft::merge_lora(base, half, 2.0, 1), "layers.0.attn.q_proj.lora_a.weight", "lora_b");
    EXPECT_ERROR_CONTAINS(peft::merge_lora(base, adapter, 2.0, 4), "rank");
  }

  void mergedLinearMatchesLoRALinear() {
    peft::LoRALinear lora(6, 5, 3, 12.0);
    set_tensor(lora->lora_b->weight, torch::randn({5, 3}));
    const StateDict base = {{"weight", lora->weight.detach().clone()}};
    const StateDict merged = peft::merge_lora(base, peft::adapter_state_dict(*lora), 12.0, 3);
    const auto x = torch::randn({2, 3, 6});
    const auto via_merged = (x.unsqueeze(-2) * merged.at("weight")).sum(-1);
    QVERIFY(torch::allclose(lora->forward(x), via_merged, 1e-4, 1e-5));
  }

  void peftNames_data() {
    QTest::addColumn<QString>("ours");
    QTest::addColumn<QString>("peft");
    const QString p = "base_model.model.";
    QTest::newRow("q a") << "layers.0.attn.q_proj.lora_a.weight" << p + "model.layers.0.self_attn.q_proj.lora_A.weight";
    QTest::newRow("q b") << "layers.0.attn.q_proj.lora_b.weight" << p + "model.layers.0.self_attn.q_proj.lora_B.weight";
    QTest::newRow("k b") << "layers.3.attn.k_proj.lora_b.weight" << p + "model.layers.3.self_attn.k_proj.lora_B.weight";
    QTest::newRow("v a") << "layers.0.attn.v_proj.lora_a.weight" << p + "model.layers.0.self_attn.v_proj.lora_A.weight";
    QTest::newRow("o b") << "layers.11.attn.output_proj.lora_b.weight"
                         << p + "model.layers.11.self_attn.o_proj.lora_B.weight";
    QTest::newRow("w1 a") << "layers.0.mlp.w1.lora_a.weight" << p + "model.layers.0.mlp.gate_proj.lora_A.weight";
    QTest::newRow("w2 b") << "layers.0.mlp.w2.lora_b.weight" << p + "model.layers.0.mlp.down_proj.lora_B.weight";
    QTest::newRow("w3 a") << "layers.2.mlp.w3.lora_a.weight" << p + "model.layers.2.mlp.up_proj.lora_A.weight";
    QTest::newRow("output a") << "output.lora_a.weight" << p + "lm_head.lora_A.weight";
    QTest::newRow("output b") << "output.lora_b.weight" << p + "lm_head.lora_B.weight";
  }
  void peftNames() {
    QFETCH(QString, ours);
    QFETCH(QString, peft);
    QCOMPARE(QString::fromStdString(peft::tune_to_peft_name(ours.toStdString()).value_or("<none>")), peft);
    QCOMPARE(QString::fromStdString(peft::peft_to_tune_name(peft.toStdString()).value_or("<none>")), ours);
    QCOMPARE(QString::fromStdString(peft::tune_to_peft_name("_orig_mod." + ours.toStdString()).value_or("<none>")),
             peft);
  }

  void notPeftNames() {
    for (const char* ours : {"layers.0.sa_norm.lora_a.weight", "tok_embeddings.lora_a.weight",
                             "layers.0.attn.q_proj.weight", "lora_a.weight"})
      QVERIFY2(!peft::tune_to_peft_name(ours), ours);
    for (const char* hf :
         {"base_model.model.model.norm.lora_A.weight", "base_model.model.model.embed_tokens.lora_A.weight",
          "model.layers.0.self_attn.q_proj.lora_A.weight", "base_model.model.model.layers.0.self_attn.q_proj.weight",
          "base_model.model.model.layers.0.input_layernorm.lora_A.weight"})
      QVERIFY2(!peft::peft_to_tune_name(hf), hf);
  }

  void rotaryPermutationCommutesWithMerge() {
    const auto args = tiny_args();
    const int64_t rank = 3;
    const double alpha = 6.0;  // scale 2
    const StateDict base = {{"layers.0.attn.q_proj.weight", torch::randn({8, 8})},
                            {"layers.0.attn.k_proj.weight", torch::randn({4, 8})},
                            {"layers.0.attn.v_proj.weight", torch::randn({4, 8})}};
    StateDict adapter;
    for (const std::string m : {"q_proj", "k_proj", "v_proj"}) {
      adapter["layers.0.attn." + m + ".lora_a.weight"] = torch::randn({rank, 8});
      adapter["layers.0.attn." + m + ".lora_b.weight"] = torch::randn({m == "q_proj" ? 8 : 4, rank});
    }
    // Left: merge in our layout, then convert the merged weights to Hugging Face's.
    const StateDict merged_hf = checkpoint::tune_to_hf(peft::merge_lora(base, adapter, alpha, rank), args);
    // Right: convert base and adapter separately, then merge in Hugging Face space as PEFT would.
    const StateDict base_hf = checkpoint::tune_to_hf(base, args);
    const StateDict adapter_peft = peft::adapter_to_peft(adapter, args);
    for (const std::string m : {"q_proj", "k_proj", "v_proj"}) {
      const std::string hf_module = "model.layers.0.self_attn." + m;
      const auto a = adapter_peft.at("base_model.model." + hf_module + ".lora_A.weight");
      const auto b = adapter_peft.at("base_model.model." + hf_module + ".lora_B.weight");
      const auto expected = base_hf.at(hf_module + ".weight") + 2.0 * b.matmul(a);
      QVERIFY2(torch::allclose(merged_hf.at(hf_module + ".weight"), expected, 1e-5, 1e-5), m.c_str());
      // lora_a is never permuted; lora_b is for q and k (so the check above is not vacuous), not for v.
      QVERIFY(torch::equal(a, adapter.at("layers.0.attn." + m + ".lora_a.weight")));
      const auto b_ours = adapter.at("layers.0.attn." + m + ".lora_b.weight");
      QCOMPARE(torch::equal(b, b_ours), m == "v_proj");
      if (m != "v_proj") {
        const auto unpermuted = base_hf.at(hf_module + ".weight") + 2.0 * b_ours.matmul(a);
        QVERIFY(!torch::allclose(merged_hf.at(hf_module + ".weight"), unpermuted, 1e-3, 1e-3));
      }
    }
    // And back: the PEFT adapter converts to exactly our tensors.
    const StateDict back = peft::adapter_from_peft(adapter_peft, args);
    QCOMPARE(keys_of(back), keys_of(adapter));
    for (const auto& [name, t] : adapter) QVERIFY2(torch::equal(back.at(name), t), name.c_str());
  }

  void saveLoadRoundTrip() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dir = tmp.filePath("step_3").toStdString();  // not there yet: save creates it
    const auto args = tiny_args(2);
    const int64_t rank = 2;
    StateDict adapter;
    auto add = [&](const std::string& module, int64_t in, int64_t out) {
      adapter[module + ".lora_a.weight"] = torch::randn({rank, in}).to(torch::kBFloat16);
      adapter[module + ".lora_b.weight"] = torch::randn({out, rank}).to(torch::kBFloat16);
    };
    add("layers.0.attn.q_proj", 8, 8);
    add("layers.1.attn.k_proj", 8, 4);
    add("layers.1.attn.v_proj", 8, 4);
    add("layers.0.mlp.w2", 12, 8);
    add("output", 8, 16);
    peft::AdapterConfig cfg;
    cfg.rank = rank;
    cfg.alpha = 16.0;
    cfg.dropout = 0.05;
    cfg.base_model_name_or_path = "meta-llama/Llama-2-7b-hf";
    peft::save_peft_adapter(dir, adapter, args, cfg);

    const QDir out(QString::fromStdString(dir));
    QCOMPARE(out.entryList(QDir::Files, QDir::Name), (QStringList{"adapter_config.json", "adapter_model.safetensors"}));

    checkpoint::SafetensorsFile file(dir + "/adapter_model.safetensors");
    std::set<std::string> stored;
    for (const auto& e : file.entries()) {
      stored.insert(e.name);
      QCOMPARE(QString::fromStdString(e.dtype), QString("BF16"));
    }
    const std::string p = "base_model.model.";
    QCOMPARE(stored, (std::set<std::string>{
                         p + "model.layers.0.self_attn.q_proj.lora_A.weight",
                         p + "model.layers.0.self_attn.q_proj.lora_B.weight",
                         p + "model.layers.1.self_attn.k_proj.lora_A.weight",
                         p + "model.layers.1.self_attn.k_proj.lora_B.weight",
                         p + "model.layers.1.self_attn.v_proj.lora_A.weight",
                         p + "model.layers.1.self_attn.v_proj.lora_B.weight",
                         p + "model.layers.0.mlp.down_proj.lora_A.weight",
                         p + "model.layers.0.mlp.down_proj.lora_B.weight",
                         p + "lm_head.lora_A.weight",
                         p + "lm_head.lora_B.weight",
                     }));

    QFile json_file(out.filePath("adapter_config.json"));
    QVERIFY(json_file.open(QIODevice::ReadOnly));
    const QByteArray raw = json_file.readAll();
    const QJsonObject j = QJsonDocument::fromJson(raw).object();
    QStringList keys = j.keys();
    keys.sort();
    QCOMPARE(keys, (QStringList{"base_model_name_or_path", "bias", "lora_alpha", "lora_dropout", "peft_type", "r",
                                "target_modules", "task_type"}));
    QCOMPARE(j["r"].toInt(), 2);
    QCOMPARE(j["lora_alpha"].toDouble(), 16.0);
    QVERIFY2(raw.contains("\"lora_alpha\": 16,"), raw.constData());  // an integer, as PEFT types it
    QCOMPARE(j["lora_dropout"].toDouble(), 0.05);
    QCOMPARE(j["peft_type"].toString(), QString("LORA"));
    QCOMPARE(j["task_type"].toString(), QString("CAUSAL_LM"));
    QCOMPARE(j["bias"].toString(), QString("none"));
    QCOMPARE(j["base_model_name_or_path"].toString(), QString("meta-llama/Llama-2-7b-hf"));
    QCOMPARE(j["target_modules"].toArray(), (QJsonArray{"q_proj", "k_proj", "v_proj", "down_proj", "lm_head"}));

    const peft::AdapterConfig read = peft::read_adapter_config(dir);
    QCOMPARE(read.rank, rank);
    QCOMPARE(read.alpha, 16.0);
    QCOMPARE(read.dropout, 0.05);
    QCOMPARE(read.base_model_name_or_path, cfg.base_model_name_or_path);
    QCOMPARE(read.target_modules, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "down_proj", "lm_head"}));

    const StateDict loaded = peft::load_peft_adapter(dir, args);
    QCOMPARE(keys_of(loaded), keys_of(adapter));
    for (const auto& [name, t] : adapter) {
      QCOMPARE(loaded.at(name).scalar_type(), torch::kBFloat16);
      QVERIFY2(torch::equal(loaded.at(name), t), name.c_str());
    }
  }

  void loadRefusesBadAdapters() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dir = tmp.path().toStdString();
    const std::string weights = dir + "/adapter_model.safetensors";
    const auto args = tiny_args();
    EXPECT_ERROR_CONTAINS(peft::load_peft_adapter(dir, args), "adapter_config.json");
    write_text(tmp.filePath("adapter_config.json"), R"({"r": 2, "lora_alpha": 4, "peft_type": "LORA"})");

    const std::string q = "base_model.model.model.layers.0.self_attn.q_proj.";
    auto save_and_load = [&](const StateDict& tensors) {
      checkpoint::save_safetensors(weights, tensors);
      peft::load_peft_adapter(dir, args);
    };
    EXPECT_ERROR_CONTAINS(save_and_load({{q + "lora_C.weight", torch::zeros({2, 8})}}), weights.c_str(),
                          "q_proj.lora_C.weight");
    EXPECT_ERROR_CONTAINS(
        save_and_load({{q + "lora_A.weight", torch::zeros({2, 7})}, {q + "lora_B.weight", torch::zeros({8, 2})}}),
        weights.c_str(), "q_proj.lora_A.weight", "[2, 7]", "[2, 8]");
    EXPECT_ERROR_CONTAINS(save_and_load({{q + "lora_A.weight", torch::zeros({2, 8})}}), weights.c_str(),
                          "q_proj.lora_A.weight", "lora_b");
    EXPECT_ERROR_CONTAINS(
        save_and_load({{q + "lora_A.weight", torch::zeros({3, 8})}, {q + "lora_B.weight", torch::zeros({8, 3})}}),
        weights.c_str(), "rank 3", "r=2");
    const std::string far = "base_model.model.model.layers.5.self_attn.q_proj.";
    EXPECT_ERROR_CONTAINS(
        save_and_load({{far + "lora_A.weight", torch::zeros({2, 8})}, {far + "lora_B.weight", torch::zeros({8, 2})}}),
        "layers.5");
    write_text(tmp.filePath("adapter_config.json"), R"({"r": 2, "lora_alpha": 4, "use_dora": true})");
    EXPECT_ERROR_CONTAINS(peft::read_adapter_config(dir), "adapter_config.json", "DoRA");
  }

  // QLoRA as torchtune loads it: built under NF4OnLoad, no base weight is allocated until the checkpoint
  // is copied in (or random weights are drawn), each then goes straight to NF4. The NF4 codes, scales and
  // logits are exactly those of the full-precision load quantised afterwards (the way eval and the
  // earlier recipe did it), in fp32 and bf16.
  void qloraBasesAreQuantisedAsTheyLoad_data() {
    QTest::addColumn<int>("dtype");
    QTest::newRow("fp32") << int(torch::kFloat);
    QTest::newRow("bf16") << int(torch::kBFloat16);
  }
  void qloraBasesAreQuantisedAsTheyLoad() {
    QFETCH(int, dtype);
    models::ModelArgs a = tiny_args(2);
    a.embed_dim = 64;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.intermediate_dim = 128;  // every projection a multiple of NF4's 64-element blocks
    peft::LoraSettings s;
    s.lora_attn_modules = {"q_proj", "k_proj", "v_proj", "output_proj"};
    s.apply_lora_to_mlp = true;
    s.quantize_base = true;
    models::BuildDtype build_dtype(static_cast<torch::ScalarType>(dtype));
    auto plain = models::build_decoder(a);
    models::init_weights(*plain, 7);
    const auto state = checkpoint::base_model_state(*plain);

    const auto build = [&](bool on_load) {
      if (!on_load) return peft::build_lora_decoder(a, s);
      peft::NF4OnLoad guard;
      return peft::build_lora_decoder(a, s);
    };
    const auto same_nf4 = [&](models::TransformerDecoder& x, models::TransformerDecoder& y) {
      const auto lx = peft::lora_modules(*x), ly = peft::lora_modules(*y);
      QCOMPARE(lx.size(), size_t(14));
      QCOMPARE(lx.size(), ly.size());
      for (size_t i = 0; i < lx.size(); ++i) {
        const auto& p = *lx[i].second->quantized_base;
        const auto& q = *ly[i].second->quantized_base;
        QVERIFY2(torch::equal(p.packed, q.packed) && torch::equal(p.scale_codes, q.scale_codes) &&
                     torch::equal(p.scale_factors, q.scale_factors) && p.scale_offset == q.scale_offset,
                 lx[i].first.c_str());
        QCOMPARE(ly[i].second->weight.numel(), int64_t(0));
      }
      torch::NoGradGuard no_grad;
      const auto tokens = torch::randint(0, a.vocab_size, {2, 9}, torch::kLong);
      QVERIFY(torch::equal(x->forward(tokens), y->forward(tokens)));
    };

    // From a checkpoint.
    auto after = build(false);
    checkpoint::copy_into_model(*after, state, "ckpt");
    QCOMPARE(peft::quantize_lora_bases(*after), int64_t(14));
    auto on_load = build(true);
    for (const auto& [name, lora] : peft::lora_modules(*on_load)) {
      QVERIFY2(lora->weight.numel() == 0 && lora->awaiting_weight(), name.c_str());  // nothing allocated yet
      QCOMPARE(lora->weight.scalar_type(), static_cast<torch::ScalarType>(dtype));
    }
    checkpoint::copy_into_model(*on_load, state, "ckpt");
    for (const auto& [name, lora] : peft::lora_modules(*on_load)) QVERIFY2(!lora->awaiting_weight(), name.c_str());
    QCOMPARE(peft::quantize_lora_bases(*on_load), int64_t(14));  // already in NF4: counted, not redone
    same_nf4(after, on_load);

    // Random weights drawn for a run without a checkpoint: the same draws either way.
    auto drawn_after = build(false);
    models::init_weights(*drawn_after, 11);
    peft::quantize_lora_bases(*drawn_after);
    auto drawn_on_load = build(true);
    models::init_weights(*drawn_on_load, 11);
    same_nf4(drawn_after, drawn_on_load);

    // A checkpoint tensor of another shape is refused naming it, before anything is quantised.
    auto wrong = state;
    wrong["layers.1.mlp.w1.weight"] = torch::zeros({64, 64});
    const QString error = error_of([&] { checkpoint::copy_into_model(*build(true), wrong, "ckpt"); });
    QVERIFY2(error.contains("gate_proj") && error.contains("[64, 64] in the checkpoint but [128, 64]"), qPrintable(error));
  }

  // The check before a build counts QLoRA's deferred bases at NF4's size: a model whose bf16 weights are
  // 1.5x this machine's memory builds (nothing of its bases is allocated until they load) and is refused
  // as plain LoRA; at 6x (NF4: 1.5x) QLoRA is refused too. (It counted every base at bf16 and refused.)
  void qloraIsCheckedAgainstMemoryAtItsStoredSize() {
    const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    models::ModelArgs a = tiny_args(1);
    a.embed_dim = 4096;
    a.num_heads = 32;
    a.num_kv_heads = 32;
    a.intermediate_dim = 11008;
    a.vocab_size = 256;
    const double layer_bf16 = 2.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
    peft::LoraSettings s;
    s.lora_attn_modules = {"q_proj", "k_proj", "v_proj", "output_proj"};
    s.apply_lora_to_mlp = true;
    s.quantize_base = true;
    models::BuildDtype bf16(torch::kBFloat16);
    a.num_layers = static_cast<int64_t>(std::ceil(1.5 * memory / layer_bf16));
    {
      peft::NF4OnLoad on_load;
      auto model = peft::build_lora_decoder(a, s);
      QCOMPARE(model->num_layers(), a.num_layers);
      for (const auto& [name, lora] : peft::lora_modules(*model)) QVERIFY2(lora->awaiting_weight(), name.c_str());
    }
    EXPECT_ERROR_CONTAINS(peft::build_lora_decoder(a, s), "BFloat16 weights, more than this machine's");
    a.num_layers *= 4;
    peft::NF4OnLoad on_load;
    EXPECT_ERROR_CONTAINS(peft::build_lora_decoder(a, s), "(quantised ones at their stored size), more than this machine's");
  }

  void decoderWithLoRAMatchesPlainAtInit() {
    const auto args = tiny_args(2);
    peft::LoraSettings targets;
    targets.lora_attn_modules = {"q_proj", "v_proj"};
    auto factory = [](const models::ProjectionSite& site) {
      if (site.name == "q_proj" || site.name == "v_proj")
        return torch::nn::AnyModule(peft::LoRALinear(site.in_features, site.out_features, 4, 8.0));
      return models::make_plain_linear(site);
    };
    auto lora_model = models::build_decoder(args, factory);
    auto plain = models::build_decoder(args);

    // Load the plain model's weights into the LoRA model by name, collecting missing/unexpected keys.
    const auto plain_params = plain->named_parameters();
    std::vector<std::string> missing, unexpected;
    for (auto& item : lora_model->named_parameters()) {
      if (const auto* src = plain_params.find(item.key()))
        set_tensor(item.value(), *src);
      else
        missing.push_back(item.key());
    }
    const auto lora_names = parameter_names(*lora_model);
    for (const auto& item : plain_params)
      if (!lora_names.count(item.key())) unexpected.push_back(item.key());
    QCOMPARE(missing.size(), size_t(8));  // 2 layers x {q, v} x {a, b}
    QVERIFY(unexpected.empty());
    peft::validate_missing_and_unexpected_for_lora(targets, missing, unexpected);

    QCOMPARE(keys_of(peft::adapter_state_dict(*lora_model)), std::set<std::string>(missing.begin(), missing.end()));
    QVERIFY(lora_names.count("layers.1.attn.v_proj.lora_b.weight"));
    const auto tokens = torch::tensor({1, 5, 7, 2}, torch::kLong).reshape({1, 4});
    QVERIFY(torch::allclose(lora_model->forward(tokens), plain->forward(tokens), 1e-5, 1e-6));
  }

  void validateMissingAndUnexpected() {
    peft::LoraSettings targets;
    targets.lora_attn_modules = {"q_proj", "v_proj"};
    targets.apply_lora_to_output = true;
    const std::vector<std::string> adapters = {"layers.0.attn.q_proj.lora_a.weight",
                                               "layers.0.attn.q_proj.lora_b.weight",
                                               "layers.0.attn.v_proj.lora_a.weight", "output.lora_b.weight"};
    peft::validate_missing_and_unexpected_for_lora(targets, adapters, {});
    EXPECT_ERROR_CONTAINS(peft::validate_missing_and_unexpected_for_lora(
                              targets, {"layers.0.attn.q_proj.lora_a.weight", "layers.0.attn.k_proj.weight"}, {}),
                          "layers.0.attn.k_proj.weight");
    EXPECT_ERROR_CONTAINS(peft::validate_missing_and_unexpected_for_lora(targets, {}, {"layers.0.attn.q_proj.bias"}),
                          "unexpected", "layers.0.attn.q_proj.bias");
    // An adapter key of a module that is not targeted cannot be missing from a correct model.
    EXPECT_ERROR_CONTAINS(
        peft::validate_missing_and_unexpected_for_lora(targets, {"layers.0.mlp.w1.lora_a.weight"}, {}),
        "layers.0.mlp.w1.lora_a.weight");
    // Adapter load: base keys may be missing, adapter keys may not.
    peft::validate_missing_and_unexpected_for_lora(targets, {}, {}, {"layers.0.attn.q_proj.weight", "norm.scale"});
    EXPECT_ERROR_CONTAINS(peft::validate_missing_and_unexpected_for_lora(targets, {}, {}, {"output.lora_a.weight"}),
                          "output.lora_a.weight");
    EXPECT_ERROR_CONTAINS(peft::validate_missing_and_unexpected_for_lora(targets, {}, {}, {}, {"foo.lora_a.weight"}),
                          "foo.lora_a.weight");
  }
};

TB_TEST(TestLora)
#include "test_lora.moc"
