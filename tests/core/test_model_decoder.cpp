// The assembled decoder: torchtune's parameter names, parameter counts against published figures,
// causality, KV-cache decoding equal to a full forward, injected projections, bf16, seeded init.
#include <QtTest>

#include "test_main.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "peft/lora_builders.h"
#include "models/build_dtype.h"
#include "models/model_args.h"
#include "models/transformer.h"

using namespace tb::models;
using tb::peft::build_lora_decoder;
using tb::peft::LoraSettings;

namespace {
ModelArgs small_args() {
  ModelArgs a = llama_tiny_test_args();
  a.vocab_size = 50;
  a.max_seq_len = 32;
  return a;
}
double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>();
}
}  // namespace

class TestModelDecoder : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void namesFollowTorchtune() {
    auto model = build_decoder(llama_tiny_test_args());
    std::vector<std::string> names;
    for (const auto& p : model->named_parameters()) names.push_back(p.key());
    std::vector<std::string> expected = {"tok_embeddings.weight"};
    for (int i = 0; i < 2; ++i) {
      const std::string l = "layers." + std::to_string(i) + ".";
      for (const char* n : {"sa_norm.scale", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight",
                            "attn.output_proj.weight", "mlp_norm.scale", "mlp.w1.weight", "mlp.w2.weight",
                            "mlp.w3.weight"})
        expected.push_back(l + n);
    }
    expected.push_back("norm.scale");
    expected.push_back("output.weight");
    QCOMPARE(names, expected);
    const auto params = model->named_parameters();
    QCOMPARE(params["layers.1.attn.k_proj.weight"].sizes().vec(), (std::vector<int64_t>{32, 64}));  // 2 kv heads x 16
    QCOMPARE(params["layers.0.mlp.w2.weight"].sizes().vec(), (std::vector<int64_t>{64, 128}));
    for (const auto& n : names) QVERIFY2(is_base_parameter(n), n.c_str());
    QVERIFY(is_base_parameter("_orig_mod.layers.3.mlp.w1.weight"));
    QVERIFY(!is_base_parameter("layers.0.attn.q_proj.lora_a.weight"));
  }

  void parameterCounts_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<qlonglong>("count");
    // Published sizes: Llama 2 7B/13B, Llama 3.1 8B, Llama 3.2 1B, Mistral 7B; llama2.c's stories
    // models tie the classifier to the embedding (15.19M, 109.53M); tiny by hand:
    // 2*512*64 + 2*(64*64*2 + 64*32*2 + 3*64*128 + 2*64) + 64 = 139584.
    QTest::newRow("llama2_7b") << "llama2_7b" << 6738415616LL;
    QTest::newRow("llama2_13b") << "llama2_13b" << 13015864320LL;
    QTest::newRow("llama3_1_8b") << "llama3_1_8b" << 8030261248LL;
    QTest::newRow("llama3_2_1b") << "llama3_2_1b" << 1235814400LL;
    QTest::newRow("mistral_7b") << "mistral_7b" << 7241732096LL;
    QTest::newRow("llama2_stories15m") << "llama2_stories15m" << 15191712LL;
    QTest::newRow("llama2_stories110m") << "llama2_stories110m" << 109529856LL;
    QTest::newRow("llama_tiny_test") << "llama_tiny_test" << 139584LL;
  }
  void parameterCounts() {
    QFETCH(QString, preset);
    QFETCH(qlonglong, count);
    const auto args = preset_args(preset.toStdString());
    QVERIFY(args.has_value());
    QCOMPARE(args->parameter_count(), count);
    if (count < 20'000'000) QCOMPARE(count_parameters(*build_decoder(*args)), count);  // the real module agrees
  }

  void forwardShapesAndHiddenSplit() {
    torch::manual_seed(0);
    auto model = build_decoder(small_args());
    init_weights(*model, 3);
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {2, 7});
    const auto logits = model->forward(tokens);
    QCOMPARE(logits.sizes().vec(), (std::vector<int64_t>{2, 7, 50}));
    QVERIFY(torch::equal(model->output_projection(model->forward_hidden(tokens)), logits));
    // Explicit positions 0..T-1 are the default.
    QVERIFY(torch::equal(model->forward(tokens, torch::arange(7)), logits));
  }

  void causalityHolds() {
    auto model = build_decoder(small_args());
    init_weights(*model, 4);
    torch::NoGradGuard g;
    auto tokens = torch::randint(0, 50, {1, 8});
    const auto before = model->forward(tokens);
    tokens[0][5] = (tokens[0][5].item<int64_t>() + 1) % 50;
    const auto after = model->forward(tokens);
    QCOMPARE(max_diff(before.slice(1, 0, 5), after.slice(1, 0, 5)), 0.0);
    QVERIFY(max_diff(before.slice(1, 5), after.slice(1, 5)) > 1e-4);
  }

  void kvCacheDecodingMatchesFullForward() {
    auto model = build_decoder(small_args());
    init_weights(*model, 5);
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {2, 9});
    const auto full = model->forward(tokens);
    model->setup_caches(2, torch::kFloat, 16);
    std::vector<torch::Tensor> parts = {model->forward(tokens.slice(1, 0, 4))};  // prefill
    for (int64_t t = 4; t < 9; ++t) parts.push_back(model->forward(tokens.slice(1, t, t + 1)));
    QCOMPARE(model->cache_position(), int64_t(9));
    QVERIFY(max_diff(torch::cat(parts, 1), full) < 1e-5);
    model->reset_caches();
    QVERIFY(max_diff(model->forward(tokens.slice(1, 0, 3)), full.slice(1, 0, 3)) < 1e-5);
    model->teardown_caches();
    QVERIFY(!model->caches_are_enabled());
  }

  void tiedEmbeddingHasNoOutputWeight() {
    ModelArgs a = small_args();
    a.tie_word_embeddings = true;
    auto model = build_decoder(a);
    init_weights(*model, 6);
    QVERIFY(!model->named_parameters().contains("output.weight"));
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {1, 4});
    const auto h = model->forward_hidden(tokens);
    QVERIFY(max_diff(model->forward(tokens), torch::matmul(h, model->tok_embeddings->weight.t())) < 1e-5);
    QCOMPARE(count_parameters(*model), a.parameter_count());
  }

  void factoryDecidesEveryProjection() {
    std::vector<ProjectionSite> seen;
    auto model = build_decoder(small_args(), [&](const ProjectionSite& s) {
      seen.push_back(s);
      return make_plain_linear(s);
    });
    QCOMPARE(seen.size(), size_t(2 * 7 + 1));
    QCOMPARE(seen[1].name, std::string("k_proj"));
    QCOMPARE(seen[1].layer, int64_t(0));
    QCOMPARE(seen[1].out_features, int64_t(32));
    QCOMPARE(seen[5].name, std::string("w2"));
    QCOMPARE(seen[5].in_features, int64_t(128));
    QCOMPARE(seen.back().name, std::string("output"));
    QCOMPARE(seen.back().layer, int64_t(-1));
    QCOMPARE(seen.back().out_features, int64_t(50));
    // A substituted module is what the model runs: a projection that scales by 0 kills attention.
    auto zero_v = build_decoder(small_args(), [](const ProjectionSite& s) {
      auto m = make_plain_linear(s);
      if (s.name == "v_proj" || s.name == "w2") {
        torch::NoGradGuard g;
        m.ptr()->named_parameters()["weight"].zero_();
      }
      return m;
    });
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {1, 3});
    // With no attention or MLP contribution every position's hidden state is norm(embedding).
    const auto h = zero_v->forward_hidden(tokens);
    QVERIFY(max_diff(h, zero_v->norm->forward(zero_v->tok_embeddings->forward(tokens))) < 1e-5);
  }

  void layerWrapperRunsEveryLayer() {
    auto model = build_decoder(small_args());
    init_weights(*model, 8);
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {1, 5});
    const auto plain = model->forward(tokens);
    std::vector<int64_t> calls;
    model->set_layer_wrapper([&](int64_t i, const TransformerDecoderImpl::LayerCall& run, const torch::Tensor& h) {
      calls.push_back(i);
      return run(h);
    });
    QVERIFY(torch::equal(model->forward(tokens), plain));
    QCOMPARE(calls, (std::vector<int64_t>{0, 1}));
  }

  void bf16ForwardStaysClose() {
    auto model = build_decoder(small_args());
    init_weights(*model, 9);
    torch::NoGradGuard g;
    const auto tokens = torch::randint(0, 50, {2, 6});
    const auto ref = model->forward(tokens);
    model->to(torch::kBFloat16);
    QCOMPARE(model->named_parameters()["norm.scale"].scalar_type(), torch::kBFloat16);
    const auto logits = model->forward(tokens);
    QCOMPARE(logits.scalar_type(), torch::kBFloat16);
    QVERIFY2(max_diff(logits, ref) < 0.05 * ref.abs().max().item<double>(), "bf16 logits far from fp32");
  }

  void seededInitIsDeterministic() {
    auto a = build_decoder(small_args()), b = build_decoder(small_args()), c = build_decoder(small_args());
    init_weights(*a, 42);
    init_weights(*b, 42);
    init_weights(*c, 43);
    const auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
    for (const auto& item : pa) QVERIFY2(torch::equal(item.value(), pb[item.key()]), item.key().c_str());
    QVERIFY(!torch::equal(pa["layers.0.attn.q_proj.weight"], pc["layers.0.attn.q_proj.weight"]));
    QVERIFY(torch::equal(pa["layers.1.mlp_norm.scale"], torch::ones({64})));
    const double std = pa["tok_embeddings.weight"].std().item<double>();
    QVERIFY2(std > 0.019 && std < 0.021, qPrintable(QString::number(std)));
    // bf16 models draw the same numbers (rounded).
    auto d = build_decoder(small_args());
    d->to(torch::kBFloat16);
    init_weights(*d, 42);
    QVERIFY(torch::equal(d->named_parameters()["output.weight"], pa["output.weight"].to(torch::kBFloat16)));
  }

  // Random weights are drawn in fp32 pieces (no whole fp32 copy of a large embedding): the values equal one
  // draw of the whole tensor, in fp32 and cast to bf16, whatever the piece size (a multiple of 16) and
  // length, tails that are not a multiple of 16 included.
  void piecewiseDrawEqualsTheWholeDraw() {
    for (const int64_t n : {5, 16, 37, 100, 1000, 4099, 65537}) {
      for (const int64_t chunk : {16, 48, 1024}) {
        auto whole_gen = at::make_generator<at::CPUGeneratorImpl>(uint64_t(n));
        auto whole = torch::empty({n}, torch::kFloat);
        whole.normal_(0.0, 0.02, whole_gen);
        for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
          auto gen = at::make_generator<at::CPUGeneratorImpl>(uint64_t(n));
          auto pieces = torch::empty({n}, dtype);
          fill_normal(pieces, 0.02, gen, chunk);
          QVERIFY2(torch::equal(pieces, whole.to(dtype)),
                   qPrintable(QString("n %1, chunk %2, %3").arg(n).arg(chunk).arg(c10::toString(dtype))));
        }
      }
    }
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
    auto t = torch::empty({64});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fill_normal(t, 0.02, gen, 24));
  }

  void badArgumentsAreRefused() {
    ModelArgs a = small_args();
    a.num_kv_heads = 3;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, build_decoder(a));
    auto model = build_decoder(small_args());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, model->forward(torch::zeros({1, 33}, torch::kLong)));
  }

  // Sizes from a wrong config.json: refused before anything is allocated, with the numbers (a billion
  // layers were built until memory ran out; hidden_size 1e12 ended in std::bad_alloc).
  void absurdSizesAreRefusedBeforeBuilding_data() {
    QTest::addColumn<qlonglong>("layers");
    QTest::addColumn<qlonglong>("dim");
    QTest::addColumn<QString>("expected");
    QTest::newRow("ten million layers") << qlonglong(10'000'000) << qlonglong(64) << "more than this machine's";
    QTest::newRow("a billion layers") << qlonglong(1'000'000'000) << qlonglong(64)
                                      << "these sizes make a model of about 4.12e+13 parameters";
    QTest::newRow("hidden_size 1e12") << qlonglong(2) << qlonglong(1'000'000'000'000) << "no model is that large";
  }
  void absurdSizesAreRefusedBeforeBuilding() {
    QFETCH(qlonglong, layers);
    QFETCH(qlonglong, dim);
    QFETCH(QString, expected);
    ModelArgs a = small_args();
    a.num_layers = layers;
    a.embed_dim = dim;
    a.explicit_head_dim = 16;
    QElapsedTimer timer;
    timer.start();
    try {
      build_decoder(a);
      QFAIL("built");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
    QVERIFY(timer.elapsed() < 5000);
  }

  void loraDecoderEqualsThePlainOneAtInitialisation() {
    LoraSettings s;
    s.lora_attn_modules = {"q_proj", "v_proj"};
    s.apply_lora_to_mlp = true;
    auto lora = build_lora_decoder(small_args(), s);
    auto plain = build_decoder(small_args());
    // Same base weights in both; lora_b starts at zero, so the logits agree.
    torch::NoGradGuard no_grad;
    auto lora_params = lora->named_parameters();
    for (const auto& item : plain->named_parameters()) lora_params[item.key()].copy_(item.value());
    const auto tokens = torch::randint(0, small_args().vocab_size, {2, 5}, torch::kLong);
    QVERIFY(torch::allclose(lora->forward(tokens), plain->forward(tokens), 1e-6, 1e-6));
    s.lora_attn_modules = {"w1"};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, build_lora_decoder(small_args(), s));
  }

  void buildDtypeGivesTheCastModel() {
    // Built in fp32 then cast, or built under BuildDtype (each piece cast as it is made): the same
    // parameters, bit for bit, in bf16; the LoRA builder's adapters included. Outside the scope: fp32.
    LoraSettings s;
    s.lora_attn_modules = {"q_proj", "v_proj"};
    s.apply_lora_to_mlp = true;
    auto args = small_args();
    args.tie_word_embeddings = false;
    torch::manual_seed(11);
    auto whole = build_lora_decoder(args, s);
    whole->to(torch::kBFloat16);
    torch::manual_seed(11);
    TransformerDecoder piecewise{nullptr};
    {
      BuildDtype scope(torch::kBFloat16);
      QCOMPARE(BuildDtype::current(), torch::kBFloat16);
      piecewise = build_lora_decoder(args, s);
    }
    QCOMPARE(BuildDtype::current(), torch::kFloat);
    auto built = piecewise->named_parameters();
    QCOMPARE(built.size(), whole->named_parameters().size());
    for (const auto& item : whole->named_parameters()) {
      const auto& p = built[item.key()];
      QCOMPARE(p.scalar_type(), torch::kBFloat16);
      QVERIFY2(torch::equal(p, item.value()), item.key().c_str());
    }
    QCOMPARE(build_decoder(args)->tok_embeddings->weight.scalar_type(), torch::kFloat);
  }
};

TB_TEST(TestModelDecoder)
#include "test_model_decoder.moc"
