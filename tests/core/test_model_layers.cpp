// The decoder's building blocks against values worked out by hand: RMSNorm, rotary embeddings
// (interleaved pairs, Llama 3.1 frequency scaling), grouped-query attention with the causal mask.
#include <QtTest>

#include "test_main.h"

#include <cmath>

#include <torch/torch.h>

#include "models/layers.h"

using namespace tb::models;

namespace {
bool near(double a, double b, double tol) { return std::abs(a - b) <= tol; }
#define EXPECT_NEAR(a, b, tol) \
  QVERIFY2(near((a), (b), (tol)), qPrintable(QString("%1 = %2, expected %3").arg(#a).arg(a, 0, 'g', 9).arg(b, 0, 'g', 9)))
}  // namespace

class TestModelLayers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void rmsNormByHand() {
    // x = [3, 4]: mean(x^2) = 12.5, + eps 3.5 = 16, rms 4 -> [0.75, 1.0], times scale [2, -1].
    RMSNorm norm(2, 3.5);
    {
      torch::NoGradGuard g;
      norm->scale.copy_(torch::tensor({2.0f, -1.0f}));
    }
    const auto y = norm->forward(torch::tensor({{3.0f, 4.0f}}));
    EXPECT_NEAR(y[0][0].item<double>(), 1.5, 1e-6);
    EXPECT_NEAR(y[0][1].item<double>(), -1.0, 1e-6);
  }

  void rmsNormComputesInFp32() {
    // In fp16, 300^2 + 400^2 overflows (max 65504); computed in fp32 the result is x / 353.553...
    RMSNorm norm(2, 1e-6);
    norm->to(torch::kHalf);
    const auto y = norm->forward(torch::tensor({{300.0f, 400.0f}}).to(torch::kHalf));
    QCOMPARE(y.scalar_type(), torch::kHalf);
    EXPECT_NEAR(y[0][0].item<double>(), 0.848528, 1e-3);
    EXPECT_NEAR(y[0][1].item<double>(), 1.131371, 1e-3);
  }

  void ropeFrequenciesPlain() {
    // theta_i = base^(-2i/d): base 16, d 8 -> 1, 1/2, 1/4, 1/8.
    const auto f = rope_inverse_frequencies(8, 16.0, std::nullopt);
    QCOMPARE(f.size(), size_t(4));
    EXPECT_NEAR(f[0], 1.0, 1e-12);
    EXPECT_NEAR(f[1], 0.5, 1e-12);
    EXPECT_NEAR(f[2], 0.25, 1e-12);
    EXPECT_NEAR(f[3], 0.125, 1e-12);
  }

  void ropeFrequenciesLlama31Scaling() {
    // old_context_len 32, low 1, high 4, factor 8: wavelengths below 32/4 = 8 stay, above 32/1 = 32
    // are divided by 8, in between blend with smooth = (32/wavelen - 1) / (4 - 1).
    //   i=0: f=1,   wavelen 2pi = 6.28    -> kept: 1
    //   i=1: f=1/2, wavelen 12.566, smooth 0.515493 -> 0.484507*0.5/8 + 0.515493*0.5 = 0.288028
    //   i=2: f=1/4, wavelen 25.133, smooth 0.091080 -> 0.908920*0.25/8 + 0.091080*0.25 = 0.051174
    //   i=3: f=1/8, wavelen 50.27     -> 1/64 = 0.015625
    const auto f = rope_inverse_frequencies(8, 16.0, RopeScaling::llama3(8.0, 1.0, 4.0, 32));
    EXPECT_NEAR(f[0], 1.0, 1e-9);
    EXPECT_NEAR(f[1], 0.2880282, 1e-6);
    EXPECT_NEAR(f[2], 0.0511737, 1e-6);
    EXPECT_NEAR(f[3], 0.015625, 1e-9);
  }

  void ropeRotatesInterleavedPairs() {
    // One 4-dim head at position 1, base 100: pair (x0, x1) turns by 1 rad, pair (x2, x3) by
    // 100^(-1/2) = 0.1 rad. [1, 2, 3, 4] -> [cos1 - 2 sin1, 2 cos1 + sin1, 3 cos.1 - 4 sin.1, 4 cos.1 + 3 sin.1].
    RotaryTables rope(4, 100.0, std::nullopt, 16);
    const auto x = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 1, 1, 4});
    const auto [cos1, sin1] = rope.at(torch::tensor({int64_t(1)}));
    const auto y = apply_rotary(x, cos1, sin1).flatten();
    EXPECT_NEAR(y[0].item<double>(), -1.1426397, 1e-6);
    EXPECT_NEAR(y[1].item<double>(), 1.9220756, 1e-6);
    EXPECT_NEAR(y[2].item<double>(), 2.5856788, 1e-6);
    EXPECT_NEAR(y[3].item<double>(), 4.2795169, 1e-6);
    // Position 0 is the identity.
    const auto [cos0, sin0] = rope.first(1, torch::kCPU);
    QVERIFY(torch::equal(apply_rotary(x, cos0, sin0), x));
  }

  void ropeKeepsDtypeAndRejectsLongSequences() {
    RotaryTables rope(4, 10000.0, std::nullopt, 8);
    const auto x = torch::randn({2, 3, 5, 4}).to(torch::kBFloat16);
    const auto [c, s] = rope.first(5, torch::kCPU);
    QCOMPARE(apply_rotary(x, c, s).scalar_type(), torch::kBFloat16);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rope.first(9, torch::kCPU));
  }

  void attentionCausalByHand() {
    // Two query heads share one kv head; D = 1, scale 1. keys [1, 2], values [10, 20].
    // t0 sees key 0 only -> 10 in both heads. t1: head 0 (q=1) softmax([1, 2]) -> 17.310586,
    // head 1 (q=2) softmax([2, 4]) -> 18.807971.
    const auto q = torch::tensor({1.0f, 1.0f, 0.0f, 2.0f}).view({1, 2, 2, 1});
    const auto k = torch::tensor({1.0f, 2.0f}).view({1, 1, 2, 1});
    const auto v = torch::tensor({10.0f, 20.0f}).view({1, 1, 2, 1});
    const auto causal = torch::ones({2, 2}, torch::kBool).triu(1);
    const auto out = grouped_query_attention(q, k, v, causal, 1.0);
    QCOMPARE(out.sizes().vec(), (std::vector<int64_t>{1, 2, 2, 1}));
    EXPECT_NEAR(out[0][0][0][0].item<double>(), 10.0, 1e-5);
    EXPECT_NEAR(out[0][1][0][0].item<double>(), 10.0, 1e-5);
    EXPECT_NEAR(out[0][0][1][0].item<double>(), 17.310586, 1e-5);
    EXPECT_NEAR(out[0][1][1][0].item<double>(), 18.807971, 1e-5);
  }

  void attentionGroupsConsecutiveHeads() {
    // Four query heads on two kv heads: heads 0,1 use kv head 0 (values 10, 20), heads 2,3 kv head 1
    // (100, 200). Zero queries give uniform weights over the visible keys.
    const auto q = torch::zeros({1, 4, 2, 2});
    const auto k = torch::randn({1, 2, 2, 2});
    const auto v = torch::tensor({10.0f, 10.0f, 20.0f, 20.0f, 100.0f, 100.0f, 200.0f, 200.0f}).view({1, 2, 2, 2});
    const auto out = grouped_query_attention(q, k, v, torch::ones({2, 2}, torch::kBool).triu(1), 0.5);
    const double expected_t0[] = {10, 10, 100, 100}, expected_t1[] = {15, 15, 150, 150};
    for (int h = 0; h < 4; ++h) {
      EXPECT_NEAR(out[0][h][0][1].item<double>(), expected_t0[h], 1e-4);
      EXPECT_NEAR(out[0][h][1][0].item<double>(), expected_t1[h], 1e-4);
    }
  }

  void attentionBatchedMaskAndBf16() {
    // A [B, T, L] mask applies per batch row; bf16 inputs give bf16 output close to fp32.
    torch::manual_seed(0);
    const auto q = torch::randn({2, 4, 3, 8}), k = torch::randn({2, 2, 3, 8}), v = torch::randn({2, 2, 3, 8});
    auto blocked = torch::ones({2, 3, 3}, torch::kBool).triu(1);
    blocked[1][2][0] = true;  // row 1, query 2 may not see key 0
    const auto out = grouped_query_attention(q, k, v, blocked, 0.35);
    // Batch row 0 equals the plain causal case; batch row 1 query 2 ignores key 0.
    const auto plain = grouped_query_attention(q, k, v, torch::ones({3, 3}, torch::kBool).triu(1), 0.35);
    QVERIFY(torch::allclose(out[0], plain[0]));
    const auto q12 = q.slice(0, 1, 2).slice(2, 2, 3), k12 = k.slice(0, 1, 2).slice(2, 1, 3), v12 = v.slice(0, 1, 2).slice(2, 1, 3);
    const auto only_late = grouped_query_attention(q12, k12, v12, torch::zeros({1, 2}, torch::kBool), 0.35);
    QVERIFY(torch::allclose(out.slice(0, 1, 2).slice(2, 2, 3), only_late, 1e-5, 1e-6));
    const auto bf = grouped_query_attention(q.to(torch::kBFloat16), k.to(torch::kBFloat16), v.to(torch::kBFloat16),
                                            blocked, 0.35);
    QCOMPARE(bf.scalar_type(), torch::kBFloat16);
    QVERIFY((bf.to(torch::kFloat) - out).abs().max().item<double>() < 0.05);
  }
};

TB_TEST(TestModelLayers)
#include "test_model_layers.moc"
