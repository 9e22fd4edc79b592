// Hugging Face checkpoints: key names, the q/k rotary permutation, config.json, sharded save,
// bitwise load -> save round trips, and the acceptance test against an independent python reference
// (tests/reference/hf_llama_reference.py: its own safetensors writer and HF-convention Llama forward).
#include <QtTest>

#include "test_main.h"
#include "model_test_support.h"
#include "test_support.h"

#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "components/builtin.h"
#include "config/registry.h"
#include "models/transformer.h"

using namespace tb;
using namespace tb::checkpoint;

namespace {

using tbtest::bitwise_equal;
using tbtest::folder_tensors;
using tbtest::next_token_loss;
using tbtest::read_json;
using tbtest::tokens_of;

QString run_python(const QStringList& args) {
  const auto r = tbtest::run_reference("hf_llama_reference.py", args);
  if (r.code != 0) return "FAILED: " + r.err;
  return r.out.trimmed();
}

void compare_folders(const QString& a, const QString& b) {
  const auto ta = folder_tensors(a), tb_ = folder_tensors(b);
  QCOMPARE(ta.size(), tb_.size());
  for (const auto& [k, v] : ta) {
    QVERIFY2(tb_.count(k), k.c_str());
    QVERIFY2(bitwise_equal(v, tb_.at(k)), k.c_str());
  }
}

models::ModelArgs tiny_args() {
  auto a = models::llama_tiny_test_args();
  a.vocab_size = 40;
  a.rope_base = 12345.0;
  return a;
}

}  // namespace

class TestHfCheckpointer : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString reference_;  // folder with the python-made variants
  QString path(const QString& name) const { return dir_.filePath(name); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!tbtest::reference_python().isEmpty(), "python3 with python3-torch is needed for the reference (scripts/setup.sh test installs it)");
    const QString out = run_python({"make", path("reference")});
    QVERIFY2(!out.startsWith("FAILED"), qPrintable(out));
    reference_ = path("reference");
  }

  void namesMapBothWays_data() {
    QTest::addColumn<QString>("hf");
    QTest::addColumn<QString>("ours");
    QTest::newRow("embed") << "model.embed_tokens.weight" << "tok_embeddings.weight";
    QTest::newRow("norm") << "model.norm.weight" << "norm.scale";
    QTest::newRow("lm_head") << "lm_head.weight" << "output.weight";
    QTest::newRow("q") << "model.layers.0.self_attn.q_proj.weight" << "layers.0.attn.q_proj.weight";
    QTest::newRow("k") << "model.layers.12.self_attn.k_proj.weight" << "layers.12.attn.k_proj.weight";
    QTest::newRow("v") << "model.layers.3.self_attn.v_proj.weight" << "layers.3.attn.v_proj.weight";
    QTest::newRow("o") << "model.layers.3.self_attn.o_proj.weight" << "layers.3.attn.output_proj.weight";
    QTest::newRow("gate") << "model.layers.1.mlp.gate_proj.weight" << "layers.1.mlp.w1.weight";
    QTest::newRow("down") << "model.layers.1.mlp.down_proj.weight" << "layers.1.mlp.w2.weight";
    QTest::newRow("up") << "model.layers.1.mlp.up_proj.weight" << "layers.1.mlp.w3.weight";
    QTest::newRow("input norm") << "model.layers.7.input_layernorm.weight" << "layers.7.sa_norm.scale";
    QTest::newRow("post norm") << "model.layers.7.post_attention_layernorm.weight" << "layers.7.mlp_norm.scale";
  }
  void namesMapBothWays() {
    QFETCH(QString, hf);
    QFETCH(QString, ours);
    QCOMPARE(QString::fromStdString(hf_to_tune_name(hf.toStdString()).value_or("?")), ours);
    QCOMPARE(QString::fromStdString(tune_to_hf_name(ours.toStdString()).value_or("?")), hf);
    QCOMPARE(QString::fromStdString(tune_to_hf_name("_orig_mod." + ours.toStdString()).value_or("?")), hf);
    QVERIFY(!hf_to_tune_name("model.layers.0.self_attn.rotary_emb.inv_freq"));
  }

  void permutationByHand() {
    // Two heads of dim 4: HF pairs rows (0,2), (1,3) of a head; ours (0,1), (2,3).
    const auto w = torch::arange(8, torch::kFloat).view({8, 1});
    const auto ours = permute_hf_to_interleaved(w, 2);
    QVERIFY(torch::equal(ours.flatten(), torch::tensor({0.f, 2.f, 1.f, 3.f, 4.f, 6.f, 5.f, 7.f})));
    const auto r = torch::randn({3 * 8, 5}).to(torch::kBFloat16);
    QVERIFY(torch::equal(permute_interleaved_to_hf(permute_hf_to_interleaved(r, 3), 3), r));
  }

  void permutationMakesTheRotaryConventionsAgree() {
    // HF: y = x*cos(cat(f, f)) + rotate_half(x)*sin(cat(f, f)). Permuting x's entries as the
    // projection rows are permuted must turn it into our interleaved rotation of permuted x.
    const int64_t D = 8, pos = 3;
    const auto inv = torch::tensor(models::rope_inverse_frequencies(D, 31337.0, std::nullopt)).to(torch::kFloat);
    const auto freqs = torch::cat({inv, inv}) * pos;
    const auto x = torch::randn({D});
    const auto rot_half = torch::cat({-x.slice(0, D / 2), x.slice(0, 0, D / 2)});
    const auto hf_out = x * freqs.cos() + rot_half * freqs.sin();
    models::RotaryTables rope(D, 31337.0, std::nullopt, 16);
    const auto [c, s] = rope.at(torch::tensor({pos}));
    const auto px = permute_hf_to_interleaved(x.view({D, 1}), 1).view({1, 1, 1, D});
    const auto ours = models::apply_rotary(px, c, s).flatten();
    QVERIFY(torch::allclose(ours, permute_hf_to_interleaved(hf_out.view({D, 1}), 1).flatten(), 1e-5, 1e-6));
  }

  void configRoundTripAndErrors() {
    const nlohmann::json hf = {{"model_type", "llama"},          {"hidden_size", 64},      {"intermediate_size", 100},
                               {"num_attention_heads", 4},       {"num_key_value_heads", 1}, {"num_hidden_layers", 3},
                               {"vocab_size", 77},               {"max_position_embeddings", 512},
                               {"rms_norm_eps", 1e-6},           {"rope_theta", 500000.0},  {"tie_word_embeddings", true},
                               {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
    const auto a = model_args_from_hf_config(hf, "cfg");
    QCOMPARE(a.embed_dim, int64_t(64));
    QCOMPARE(a.intermediate_dim, int64_t(100));
    QCOMPARE(a.num_kv_heads, int64_t(1));
    QCOMPARE(a.num_layers, int64_t(3));
    QCOMPARE(a.vocab_size, int64_t(77));
    QCOMPARE(a.max_seq_len, int64_t(512));
    QCOMPARE(a.norm_eps, 1e-6);
    QCOMPARE(a.rope_base, 500000.0);
    QVERIFY(a.tie_word_embeddings);
    QVERIFY(a.rope_scaling && a.rope_scaling->scale_factor == 32.0 && a.rope_scaling->old_context_len == 8192);
    const auto back = model_args_from_hf_config(hf_config_from_model_args(a, "LLAMA3_2", "bfloat16"), "gen");
    QVERIFY(back.differences(a).empty());
    // vocab_size, num_kv_heads, max_seq_len, intermediate_dim, rope_base, rope_scaling.
    QCOMPARE(models::llama3_1_8b_args().differences(models::llama2_7b_args()).size(), size_t(6));

    auto expect_error = [](nlohmann::json j, const std::string& needle) {
      try {
        model_args_from_hf_config(j, "some/config.json");
        QFAIL(("accepted: " + needle).c_str());
      } catch (const std::runtime_error& e) {
        QVERIFY2(std::string(e.what()).find("some/config.json: ") == 0, e.what());
        QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
      }
    };
    auto missing = hf;
    missing.erase("hidden_size");
    expect_error(missing, "missing 'hidden_size'");
    auto yarn = hf;
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expect_error(yarn, "rope_scaling type 'yarn'");
    auto bias = hf;
    bias["attention_bias"] = true;
    expect_error(bias, "attention_bias");
    auto moe = hf;  // a family this version does not build
    moe["model_type"] = "qwen2_moe";
    expect_error(moe, "qwen2_moe");
    auto odd = hf;
    odd["num_key_value_heads"] = 3;
    expect_error(odd, "num_kv_heads");
  }

  // A config.json whose sizes make more weights than this machine's memory: refused before anything is
  // allocated, naming the file the sizes came from (the message named no file before), for the plain
  // and the LoRA builder a config names.
  void aModelLargerThanMemoryNamesItsConfigJson() {
    const QString folder = dir_.filePath("huge_model");
    QVERIFY(QDir().mkpath(folder));
    const nlohmann::json hf = {{"model_type", "llama"},      {"hidden_size", 64},         {"intermediate_size", 128},
                               {"num_attention_heads", 4},   {"num_key_value_heads", 4},  {"num_hidden_layers", 10'000'000},
                               {"vocab_size", 77},           {"max_position_embeddings", 512}, {"rms_norm_eps", 1e-6}};
    const std::string file = (folder + "/config.json").toStdString();
    tbtest::write_file(file, hf.dump());
    for (const std::string component : {"from_hf_config", "lora_from_hf_config"}) {
      YAML::Node node = YAML::Load("{_component_: " + component + ", path: '" + folder.toStdString() +
                                         "', lora_attn_modules: [q_proj]}");
      if (component == "from_hf_config") node.remove("lora_attn_modules");
      try {
        components::builtin().build<models::TransformerDecoder>(node);
        QFAIL(("built " + component).c_str());
      } catch (const std::runtime_error& e) {
        QVERIFY2(std::string(e.what()).rfind(file + ": the model has ", 0) == 0, e.what());
        QVERIFY2(std::string(e.what()).find("more than this machine's") != std::string::npos, e.what());
      }
    }
  }

  void roundTripIsBitwise_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<qlonglong>("maxShardBytes");
    QTest::addColumn<bool>("tied");
    QTest::newRow("fp32 single") << int(torch::kFloat) << qlonglong(kDefaultMaxShardBytes) << false;
    QTest::newRow("fp32 sharded") << int(torch::kFloat) << qlonglong(60000) << false;
    QTest::newRow("bf16 sharded tied") << int(torch::kBFloat16) << qlonglong(30000) << true;
  }
  void roundTripIsBitwise() {
    QFETCH(int, dtype);
    QFETCH(qlonglong, maxShardBytes);
    QFETCH(bool, tied);
    auto args = tiny_args();
    args.tie_word_embeddings = tied;
    auto model = models::build_decoder(args);
    model->to(static_cast<torch::ScalarType>(dtype));
    HFCheckpointerOptions opts;
    opts.model_type = "LLAMA3";
    opts.output_dir = path("rt").toStdString();
    opts.max_shard_bytes = static_cast<uint64_t>(maxShardBytes);
    const auto random = FullModelHFCheckpointer(opts).load_into(*model, 11);
    QVERIFY(random.random_init);
    QVERIFY(random.message.find("seeded random") != std::string::npos);
    const QString first = QString::fromStdString(FullModelHFCheckpointer(opts).save("first", *model));
    QVERIFY(QFile::exists(first + "/config.json"));

    // Load the saved folder into a fresh model and save again: same keys, dtypes and bytes.
    auto opts2 = opts;
    opts2.checkpoint_dir = first.toStdString();
    FullModelHFCheckpointer ckpt(opts2);
    auto again = models::build_decoder(*ckpt.checkpoint_args());
    again->to(static_cast<torch::ScalarType>(dtype));
    const auto report = ckpt.load_into(*again, 0);
    QVERIFY(!report.random_init);
    QVERIFY2(report.warnings.empty(), report.warnings.empty() ? "" : report.warnings[0].c_str());
    const QString second = QString::fromStdString(ckpt.save("second", *again));
    compare_folders(first, second);

    // The layout: shards named model-0000k-of-0000n, an index covering every key, no lm_head when tied.
    const auto index = read_json(second + "/model.safetensors.index.json");
    const auto shards = QDir(second).entryList({"model-*-of-*.safetensors"}, QDir::Files);
    const auto tensors = folder_tensors(second);
    QCOMPARE(index["weight_map"].size(), tensors.size());
    uint64_t total = 0;
    for (const auto& [k, t] : tensors) total += t.numel() * t.element_size();
    QCOMPARE(index["metadata"]["total_size"].get<uint64_t>(), total);
    const int expected_shards = maxShardBytes >= int64_t(total) ? 1 : int((total + maxShardBytes - 1) / maxShardBytes);
    QVERIFY2(shards.size() >= expected_shards, qPrintable(shards.join(",")));
    QVERIFY(shards.first() == QString("model-00001-of-%1.safetensors").arg(shards.size(), 5, 10, QChar('0')));
    for (const auto& s : shards)
      if (shards.size() > 1) QVERIFY(QFileInfo(second + "/" + s).size() < maxShardBytes + 4096);
    QCOMPARE(tensors.count("lm_head.weight"), size_t(tied ? 0 : 1));
    QCOMPARE(read_json(second + "/config.json")["tie_word_embeddings"].get<bool>(), tied);
    QVERIFY(tensors.count("model.layers.1.self_attn.k_proj.weight"));
    const auto& emb = tensors.at("model.embed_tokens.weight");
    QCOMPARE(emb.scalar_type(), static_cast<torch::ScalarType>(dtype));
  }

  void resavingWithFewerShardsRemovesStaleOnes() {
    auto model = models::build_decoder(tiny_args());
    const auto state = base_model_state(*model);
    const auto cfg = hf_config_from_model_args(tiny_args(), "LLAMA2", "float32");
    const std::string folder = path("stale").toStdString();
    save_model_state(folder, state, cfg, 20000);
    QVERIFY(QDir(path("stale")).entryList({"model-*.safetensors"}).size() > 2);
    save_model_state(folder, state, cfg);
    QCOMPARE(QDir(path("stale")).entryList({"model-*.safetensors"}), QStringList{"model-00001-of-00001.safetensors"});
  }

  void lazySaveMakesOneTensorAtATimeAndMatchesTheEagerSave() {
    auto model = models::build_decoder(tiny_args());
    const auto state = base_model_state(*model);
    const auto cfg = hf_config_from_model_args(tiny_args(), "LLAMA2", "float32");
    int live = 0, most = 0;
    LazyStateDict lazy_state;
    for (const auto& [name, t] : state)
      lazy_state[name] = {t.sizes().vec(), t.scalar_type(), [&live, &most, t] {
                            auto* copy = new torch::Tensor(t.clone());
                            most = std::max(most, ++live);
                            return torch::from_blob(
                                copy->data_ptr(), copy->sizes(),
                                [&live, copy](void*) { delete copy; --live; }, copy->options());
                          }};
    save_model_state(path("lazy").toStdString(), lazy_state, cfg, 20000);
    QCOMPARE(most, 1);
    QCOMPARE(live, 0);
    save_model_state(path("eager").toStdString(), state, cfg, 20000);
    compare_folders(path("lazy"), path("eager"));  // q/k permuted alike, same shards
    QCOMPARE(QDir(path("lazy")).entryList({"model-*.safetensors"}), QDir(path("eager")).entryList({"model-*.safetensors"}));
  }

  void shapeMismatchNamesTheTensor() {
    auto model = models::build_decoder(tiny_args());
    HFCheckpointerOptions opts;
    opts.output_dir = path("mm").toStdString();
    const auto folder = FullModelHFCheckpointer(opts).save("ckpt", *model);
    auto narrow = tiny_args();
    narrow.intermediate_dim = 96;
    auto other = models::build_decoder(narrow);
    opts.checkpoint_dir = folder;
    try {
      FullModelHFCheckpointer(opts).load_into(*other, 0);
      QFAIL("a mismatched checkpoint loaded");
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("model.layers.0.mlp.gate_proj.weight") != std::string::npos, e.what());
      QVERIFY2(msg.find("[128, 64] in the checkpoint but [96, 64] in the model") != std::string::npos, e.what());
    }
    // A tied model takes an untied checkpoint only when lm_head equals the embedding.
    auto tied = tiny_args();
    tied.tie_word_embeddings = true;
    auto tied_model = models::build_decoder(tied);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, FullModelHFCheckpointer(opts).load_into(*tied_model, 0));
  }

  // An integer tensor where the model has a float weight: refused with its name (it was converted).
  void integerTensorForAFloatWeightIsRefused() {
    auto model = models::build_decoder(tiny_args());
    auto state = base_model_state(*model);
    state["norm.scale"] = torch::ones(state["norm.scale"].sizes(), torch::kInt);
    const auto folder = path("int_weight").toStdString();
    save_model_state(folder, state, hf_config_from_model_args(tiny_args(), "LLAMA2", "float32"));
    HFCheckpointerOptions opts;
    opts.checkpoint_dir = folder;
    try {
      FullModelHFCheckpointer(opts).load_into(*model, 0);
      QFAIL("an I32 norm weight loaded");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("'model.norm.weight' is stored as Int but is a floating-point weight") !=
                   std::string::npos,
               e.what());
    }
  }

  void refusesUnsupportedOptions() {
    HFCheckpointerOptions opts;
    opts.model_type = "T5_ENCODER";  // a torchtune model type for no decoder built here
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FullModelHFCheckpointer{opts});
    opts.model_type = "LLAMA2";
    opts.safe_serialization = false;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FullModelHFCheckpointer{opts});
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, resolve_checkpoint_files(path("nowhere").toStdString(), {}));
  }

  // ---- against the independent python reference
  void matchesReferenceLoss_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<int>("computeDtype");
    QTest::addColumn<QString>("expectedKey");
    QTest::addColumn<double>("relTol");
    QTest::newRow("fp32 GQA theta 31337") << "fp32_gqa" << int(torch::kFloat) << "loss" << 1e-4;
    QTest::newRow("fp32 rope scaling, tied, MQA") << "fp32_scaled_tied" << int(torch::kFloat) << "loss" << 1e-4;
    QTest::newRow("bf16 weights, fp32 compute") << "bf16_gqa" << int(torch::kFloat) << "loss_fp32_compute" << 1e-4;
    // bf16 compute: both sides round every op to 8 mantissa bits but in different orders (ours rotates
    // in fp32, HF in bf16); measured 2.4e-5 relative, allowed 1e-3.
    QTest::newRow("bf16 weights, bf16 compute") << "bf16_gqa" << int(torch::kBFloat16) << "loss" << 1e-3;
  }
  void matchesReferenceLoss() {
    QFETCH(QString, variant);
    QFETCH(int, computeDtype);
    QFETCH(QString, expectedKey);
    QFETCH(double, relTol);
    const QString folder = reference_ + "/" + variant;
    HFCheckpointerOptions opts;
    opts.checkpoint_dir = folder.toStdString();
    opts.output_dir = path("out-" + variant).toStdString();
    opts.model_type = "LLAMA3";
    FullModelHFCheckpointer ckpt(opts);
    auto model = models::build_decoder(*ckpt.checkpoint_args());  // what from_hf_config builds
    model->to(static_cast<torch::ScalarType>(computeDtype));
    const auto report = ckpt.load_into(*model, 0);
    QVERIFY(!report.random_init);
    QVERIFY2(report.warnings.empty(), report.warnings.empty() ? "" : report.warnings[0].c_str());
    model->eval();
    torch::NoGradGuard no_grad;
    const auto tokens = tokens_of(folder);
    const auto logits = model->forward(tokens);
    const double loss = next_token_loss(logits, tokens);
    const double expected = read_json(folder + "/expected.json")[expectedKey.toStdString()].get<double>();
    const double rel = std::abs(loss - expected) / std::abs(expected);
    qInfo("%s: loss %.9f, reference %.9f, relative difference %.2e", qPrintable(variant), loss, expected, rel);
    QVERIFY2(rel <= relTol, qPrintable(QString("loss %1 vs reference %2").arg(loss, 0, 'g', 10).arg(expected, 0, 'g', 10)));
    if (computeDtype == int(torch::kFloat)) {
      const auto ref = load_safetensors((folder + "/logits.safetensors").toStdString()).at("logits_fp32_compute");
      const double diff = (logits - ref).abs().max().item<double>();
      QVERIFY2(diff <= 1e-4 * ref.abs().max().item<double>(), qPrintable(QString("max logit difference %1").arg(diff)));
    }
  }

  void withoutThePermutationTheLossIsWrong() {
    // Negative control: renaming alone (no q/k row permutation) must change the loss, so the test
    // above would catch a wrong or missing permutation.
    const QString folder = reference_ + "/fp32_gqa";
    const auto args = read_hf_model_args(folder.toStdString());
    StateDict renamed;
    for (const auto& [k, v] : load_hf_state(folder.toStdString(), {})) renamed[*hf_to_tune_name(k)] = v;
    auto model = models::build_decoder(args);
    copy_into_model(*model, renamed, "renamed");
    torch::NoGradGuard no_grad;
    const auto tokens = tokens_of(folder);
    const double loss = next_token_loss(model->forward(tokens), tokens);
    const double expected = read_json(folder + "/expected.json")["loss"].get<double>();
    QVERIFY2(std::abs(loss - expected) > 1e-3 * expected, qPrintable(QString::number(loss)));
    // Likewise the default rope_theta instead of the checkpoint's 31337.
    auto wrong_theta = args;
    wrong_theta.rope_base = 10000.0;
    auto model2 = models::build_decoder(wrong_theta);
    copy_into_model(*model2, load_model_state(folder.toStdString(), {}, args), "theta");
    const double loss2 = next_token_loss(model2->forward(tokens), tokens);
    QVERIFY2(std::abs(loss2 - expected) > 1e-4 * expected, qPrintable(QString::number(loss2)));
  }

  void savedFolderIsBitwiseTheReferenceAndLoadsThere_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<int>("dtype");
    QTest::newRow("fp32 single file") << "fp32_gqa" << int(torch::kFloat);
    QTest::newRow("bf16 three shards") << "bf16_gqa" << int(torch::kBFloat16);
    QTest::newRow("fp32 tied") << "fp32_scaled_tied" << int(torch::kFloat);
  }
  void savedFolderIsBitwiseTheReferenceAndLoadsThere() {
    QFETCH(QString, variant);
    QFETCH(int, dtype);
    const QString folder = reference_ + "/" + variant;
    HFCheckpointerOptions opts;
    opts.checkpoint_dir = folder.toStdString();
    opts.output_dir = path("resaved-" + variant).toStdString();
    opts.max_shard_bytes = 20000;
    FullModelHFCheckpointer ckpt(opts);
    auto model = models::build_decoder(*ckpt.checkpoint_args());
    model->to(static_cast<torch::ScalarType>(dtype));
    ckpt.load_into(*model, 0);
    const QString saved = QString::fromStdString(ckpt.save("step_1", *model));
    compare_folders(folder, saved);  // same HF keys, dtypes and bytes as the independent writer's
    // The independent reader computes the same loss from our files.
    const QString out = run_python({"eval", saved, folder + "/tokens.json"});
    QVERIFY2(!out.startsWith("FAILED"), qPrintable(out));
    const double loss = nlohmann::json::parse(out.toStdString())["loss"].get<double>();
    const double expected = read_json(folder + "/expected.json")["loss_fp32_compute"].get<double>();
    QCOMPARE(loss, expected);
  }
};

TB_TEST(TestHfCheckpointer)
#include "test_hf_checkpointer.moc"
