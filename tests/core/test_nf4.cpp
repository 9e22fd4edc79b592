// NF4 quantisation against values worked out by hand: the code book, nearest-code indices and their
// nibble packing, the double-quantised scales (torchao's formula, recomputed here in double), the
// round-trip error bound, storage per parameter, and linear_nf4's forward and backward.
#include <QtTest>

#include "test_main.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

#include "quant/nf4.h"

using namespace tb::quant;

Q_DECLARE_METATYPE(torch::ScalarType)

namespace {

// The table from the QLoRA paper / bitsandbytes, typed out again so a wrong entry in the code shows.
const float kExpectedCodes[16] = {-1.0f,
                                  -0.6961928009986877f,
                                  -0.5250730514526367f,
                                  -0.39491748809814453f,
                                  -0.28444138169288635f,
                                  -0.18477343022823334f,
                                  -0.09105003625154495f,
                                  0.0f,
                                  0.07958029955625534f,
                                  0.16093020141124725f,
                                  0.24611230194568634f,
                                  0.33791524171829224f,
                                  0.44070982933044434f,
                                  0.5626170039176941f,
                                  0.7229568362236023f,
                                  1.0f};

// Brute force: the code with the smallest |x - code|, the lower index on ties.
int nearest_code(float x) {
  int best = 0;
  for (int i = 1; i < 16; ++i)
    if (std::abs(x - kExpectedCodes[i]) < std::abs(x - kExpectedCodes[best])) best = i;
  return best;
}

std::vector<float> values_of(const torch::Tensor& t) {
  const auto c = t.to(torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::vector<double> block_absmax(const std::vector<float>& w, int64_t block) {
  std::vector<double> a(w.size() / static_cast<size_t>(block), 0.0);
  for (size_t i = 0; i < w.size(); ++i) a[i / block] = std::max(a[i / block], std::abs(double(w[i])));
  return a;
}

// torchao's double quantisation, in double: offset = mean(a); per group of `group` scales,
// s2 = 256 / (2 * max|a - offset|), code = clamp(round_half_even((a - offset) * s2), -128, 127).
struct HandScales {
  double offset = 0;
  std::vector<double> s2;      // per group
  std::vector<double> scaled;  // (a - offset) * s2, per block, before rounding
};

HandScales hand_scales(const std::vector<double>& a, int64_t group) {
  HandScales h;
  for (const double v : a) h.offset += v;
  h.offset /= double(a.size());
  const size_t n_groups = (a.size() + group - 1) / group;
  std::vector<double> gmax(n_groups, 0.0);
  for (size_t b = 0; b < a.size(); ++b) gmax[b / group] = std::max(gmax[b / group], std::abs(a[b] - h.offset));
  for (const double m : gmax) h.s2.push_back(256.0 / (2.0 * m));
  for (size_t b = 0; b < a.size(); ++b) h.scaled.push_back((a[b] - h.offset) * h.s2[b / group]);
  return h;
}

std::vector<int> unpack(const torch::Tensor& packed) {
  const auto p = packed.contiguous();
  std::vector<int> codes;
  for (int64_t i = 0; i < p.numel(); ++i) {
    const int byte = p.data_ptr<uint8_t>()[i];
    codes.push_back(byte >> 4);
    codes.push_back(byte & 15);
  }
  return codes;
}

double max_half_gap() {
  double gap = 0;
  for (int i = 0; i + 1 < 16; ++i) gap = std::max(gap, double(kExpectedCodes[i + 1]) - kExpectedCodes[i]);
  return gap / 2;  // the widest gap is -1 .. -0.6961928: half of it 0.1519036
}

}  // namespace

class TestNf4 : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void codeBook() {
    const auto& codes = nf4_code_book();
    QCOMPARE(codes.size(), size_t(16));
    for (size_t i = 0; i < 16; ++i) QCOMPARE(codes[i], kExpectedCodes[i]);
    QVERIFY(std::is_sorted(codes.begin(), codes.end()));
    QVERIFY(std::adjacent_find(codes.begin(), codes.end()) == codes.end());  // strictly ascending
    QCOMPARE(codes.front(), -1.0f);
    QCOMPARE(codes[7], 0.0f);
    QCOMPARE(codes.back(), 1.0f);
  }

  void handMadeBlocksQuantiseAndPack() {
    // Block 0, absmax 2: x = w / 2.
    //   2.0 -> 1.0 -> 15;  1.0 -> 0.5: |0.5 - 0.4407| = 0.0593 < |0.5626 - 0.5| = 0.0626 -> 12
    //   -0.6 -> -0.3: closer to -0.2844 (0.0156) than -0.3949 -> 4;  0 -> 7;  -2 -> -1 -> 0
    //   0.1 -> 0.05: closer to 0.0796 (0.0296) than 0 -> 8;  1.3 -> 0.65: 0.7230 (0.073) vs 0.5626 (0.087) -> 14
    //   -1.5 -> -0.75: -0.6962 (0.054) vs -1 (0.25) -> 1;  the rest 0 -> 7.
    // Block 1, absmax 0.5: -0.5 -> -1 -> 0;  0.125 -> 0.25: 0.2461 (0.0039) vs 0.3379 -> 10.
    // Block 2, absmax 1: exact ties, c8/2 between codes 7 and 8, c6/2 between 6 and 7 -> lower: 7, 6.
    auto w = torch::zeros({3 * 64});
    const float block0[8] = {2.0f, 1.0f, -0.6f, 0.0f, -2.0f, 0.1f, 1.3f, -1.5f};
    for (int i = 0; i < 8; ++i) w[i] = block0[i];
    w[64] = -0.5f;
    w[65] = 0.125f;
    w[128] = 1.0f;
    w[129] = kExpectedCodes[8] / 2;
    w[130] = kExpectedCodes[6] / 2;
    const auto q = quantize_nf4(w.view({3, 64}));
    QCOMPARE(q.packed.scalar_type(), torch::kByte);
    QCOMPARE(q.packed.numel(), int64_t(96));

    const auto codes = unpack(q.packed);
    const int expected0[8] = {15, 12, 4, 7, 0, 8, 14, 1};
    for (int i = 0; i < 8; ++i) QCOMPARE(codes[i], expected0[i]);
    for (int i = 8; i < 64; ++i) QCOMPARE(codes[i], 7);
    QCOMPARE(codes[64], 0);
    QCOMPARE(codes[65], 10);
    QCOMPARE(codes[128], 15);
    QCOMPARE(codes[129], 7);
    QCOMPARE(codes[130], 6);

    // The first element of each pair in the high nibble.
    const auto bytes = q.packed.contiguous();
    const uint8_t* b = bytes.data_ptr<uint8_t>();
    QCOMPARE(int(b[0]), (15 << 4) | 12);  // 252
    QCOMPARE(int(b[1]), (4 << 4) | 7);    // 71
    QCOMPARE(int(b[2]), (0 << 4) | 8);    // 8
    QCOMPARE(int(b[3]), (14 << 4) | 1);   // 225
    QCOMPARE(int(b[4]), (7 << 4) | 7);    // 119: zeros
    QCOMPARE(int(b[32]), (0 << 4) | 10);  // 10
    QCOMPARE(int(b[64]), (15 << 4) | 7);  // 247
    QCOMPARE(int(b[65]), (6 << 4) | 7);   // 103
  }

  void randomCodesAreTheNearest() {
    // Every index equals the brute-force nearest code of w / absmax(block).
    torch::manual_seed(1);
    const auto w = torch::randn({64, 128});
    const auto q = quantize_nf4(w);
    const auto v = values_of(w);
    const auto a = block_absmax(v, 64);
    const auto codes = unpack(q.packed);
    QCOMPARE(codes.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i)
      if (codes[i] != nearest_code(float(v[i] / float(a[i / 64]))))
        QFAIL(qPrintable(
            QString("element %1: code %2, expected %3").arg(i).arg(codes[i]).arg(nearest_code(v[i] / a[i / 64]))));
  }

  void doubleQuantisedScales() {
    // 300 blocks: one full group of 256 and a last group of 44 with its own factor.
    torch::manual_seed(2);
    const auto w = torch::randn({300, 64}) * torch::linspace(0.5, 2.0, 300).unsqueeze(1);
    const auto q = quantize_nf4(w);
    const auto a = block_absmax(values_of(w), 64);
    const auto h = hand_scales(a, 256);

    QCOMPARE(q.scale_codes.scalar_type(), torch::kChar);
    QCOMPARE(q.scale_codes.numel(), int64_t(300));
    QCOMPARE(q.scale_factors.numel(), int64_t(2));
    QVERIFY(std::abs(q.scale_offset - h.offset) <= 1e-6 * h.offset);
    const auto s2 = values_of(q.scale_factors);
    for (size_t g = 0; g < 2; ++g) QVERIFY(std::abs(s2[g] - h.s2[g]) <= 1e-5 * h.s2[g]);

    const auto codes = q.scale_codes.contiguous();
    const auto deq = values_of(dequantize_nf4_scales(q));
    int clamped = 0;
    for (size_t b = 0; b < a.size(); ++b) {
      const double x = h.scaled[b];
      const int code = codes.data_ptr<int8_t>()[b];
      const double expected = std::clamp(std::nearbyint(x), -128.0, 127.0);
      // fp32 arithmetic may round the other way only right at a half.
      if (std::abs(std::abs(x - std::floor(x)) - 0.5) > 1e-3) QCOMPARE(double(code), expected);
      // Within half a step of the true scale, except the one at +128 per group clamped to 127: one step.
      const double step = 1.0 / h.s2[b / 256];
      const bool was_clamped = x > 127.5;
      clamped += was_clamped;
      const double bound = (was_clamped ? step : step / 2) + 1e-6;
      QVERIFY2(std::abs(deq[b] - a[b]) <= bound,
               qPrintable(QString("block %1: scale %2, true %3, bound %4").arg(b).arg(deq[b]).arg(a[b]).arg(bound)));
    }
    // Each group whose largest |centred| scale is positive has exactly that one at 127.
    QVERIFY(clamped >= 1);
    QVERIFY(clamped <= 2);
  }

  void roundTripErrorBound() {
    torch::manual_seed(0);
    const auto w = torch::randn({128, 256});
    const auto q = quantize_nf4(w);
    const auto deq = dequantize_nf4(q);
    QCOMPARE(deq.sizes(), w.sizes());
    QCOMPARE(deq.scalar_type(), torch::kFloat);

    // |code * s' - x * a| <= |code - x| * a + |code| * |s' - a|, with |code| <= 1.
    const auto v = values_of(w);
    const auto d = values_of(deq);
    const auto a = block_absmax(v, 64);
    const auto h = hand_scales(a, 256);
    const double half_gap = max_half_gap();
    QVERIFY(std::abs(half_gap - 0.1519036) < 1e-6);
    double sum_err = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t b = i / 64;
      const double step = 1.0 / h.s2[b / 256];
      const double scale_err = h.scaled[b] > 127.5 ? step : step / 2;
      const double err = std::abs(double(d[i]) - v[i]);
      const double bound = half_gap * a[b] + scale_err + 1e-6;
      if (err > bound) QFAIL(qPrintable(QString("element %1: error %2 > bound %3").arg(i).arg(err).arg(bound)));
      sum_err += err;
    }
    const double std_w = w.std().item<double>();
    QVERIFY2(sum_err / double(v.size()) < 0.1 * std_w, qPrintable(QString::number(sum_err / double(v.size()))));

    // bf16 output is the fp32 result rounded.
    QVERIFY(torch::equal(dequantize_nf4(q, torch::kBFloat16), deq.to(torch::kBFloat16)));
  }

  void degenerateBlocks() {
    // An all-zero block decodes to exact zeros; equal scales (centred absmax 0) stay finite and exact.
    auto w = torch::randn({4, 64});
    w[1].zero_();
    const auto q = quantize_nf4(w);
    const auto deq = dequantize_nf4(q);
    QVERIFY(torch::isfinite(deq).all().item<bool>());
    QVERIFY(torch::equal(deq[1], torch::zeros({64})));

    const auto ones = torch::ones({4, 64});
    const auto qo = quantize_nf4(ones);
    QVERIFY(torch::isfinite(qo.scale_factors).all().item<bool>());
    QCOMPARE(qo.scale_offset, 1.0f);
    QVERIFY(torch::equal(dequantize_nf4(qo), ones));
  }

  void bytesPerParameter() {
    // 1024 * 1024 / 2 packed + 16384 int8 scales + 64 fp32 factors + the fp32 offset.
    const auto q = quantize_nf4(torch::randn({1024, 1024}));
    QCOMPARE(q.bytes(), int64_t(524288 + 16384 + 64 * 4 + 4));
    const double per_param = double(q.bytes()) / (1024.0 * 1024.0);
    QVERIFY(per_param > 0.5 && per_param < 0.53);
  }

  void linearForwardBackward_data() {
    QTest::addColumn<torch::ScalarType>("dtype");
    QTest::addColumn<bool>("threeD");
    QTest::addColumn<double>("tol");
    QTest::newRow("fp32 [N, in]") << torch::kFloat << false << 1e-5;
    QTest::newRow("fp32 [B, T, in]") << torch::kFloat << true << 1e-5;
    QTest::newRow("bf16 [N, in]") << torch::kBFloat16 << false << 5e-2;
    QTest::newRow("bf16 [B, T, in]") << torch::kBFloat16 << true << 5e-2;
  }

  void linearForwardBackward() {
    QFETCH(torch::ScalarType, dtype);
    QFETCH(bool, threeD);
    QFETCH(double, tol);
    torch::manual_seed(3);
    const auto nf4 = std::make_shared<const NF4Weight>(quantize_nf4(torch::randn({48, 128}) * 0.1));
    const auto w = dequantize_nf4(*nf4, dtype);
    const auto shape = threeD ? std::vector<int64_t>{2, 5, 128} : std::vector<int64_t>{7, 128};
    const auto x = torch::randn(shape).to(dtype).requires_grad_(true);

    const auto y = linear_nf4(x, nf4);
    QCOMPARE(y.scalar_type(), dtype);
    QCOMPARE(y.size(-1), int64_t(48));
    QCOMPARE(y.dim(), x.dim());
    QVERIFY(y.grad_fn() != nullptr);
    QCOMPARE(y.grad_fn()->num_inputs(), uint32_t(1));  // an edge to the input only
    QVERIFY(!nf4->packed.requires_grad() && !nf4->scale_codes.requires_grad() && !nf4->scale_factors.requires_grad());

    // Reference: autograd through a plain linear with the dequantised weight, frozen.
    const auto x_ref = x.detach().clone().requires_grad_(true);
    const auto y_ref = torch::nn::functional::linear(x_ref, w);
    QVERIFY(torch::allclose(y.to(torch::kFloat), y_ref.to(torch::kFloat), tol, tol));
    QVERIFY(torch::allclose(y.to(torch::kFloat), x.detach().matmul(w.t()).to(torch::kFloat), tol, tol));

    const auto grad_out = torch::randn(y.sizes()).to(dtype);
    y.backward(grad_out);
    y_ref.backward(grad_out);
    QVERIFY(x.grad().defined());
    QCOMPARE(x.grad().sizes(), x.sizes());
    QVERIFY(torch::allclose(x.grad().to(torch::kFloat), x_ref.grad().to(torch::kFloat), tol, tol));
    QVERIFY(torch::allclose(x.grad().to(torch::kFloat), grad_out.matmul(w).to(torch::kFloat), tol, tol));
    QVERIFY(!nf4->packed.grad().defined());
  }

  void linearWithoutGrad() {
    const auto nf4 = std::make_shared<const NF4Weight>(quantize_nf4(torch::randn({16, 64})));
    const auto x = torch::randn({3, 64});
    const auto y = linear_nf4(x, nf4);
    QVERIFY(!y.requires_grad());
    QVERIFY(torch::allclose(y, x.matmul(dequantize_nf4(*nf4).t()), 1e-5, 1e-5));
  }

  void badInputsThrow() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::randn({3, 7})));    // 21 % 64 != 0
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::randn({2, 100})));  // 200 % 64 != 0
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::randn({2, 64}), 63));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::randn({2, 64}), 64, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::randn({0, 64})));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(torch::ones({2, 64}, torch::kLong)));
    auto with_nan = torch::randn({2, 64});
    with_nan[1][3] = std::numeric_limits<float>::quiet_NaN();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize_nf4(with_nan));
    // A block size that divides numel works: 192 = 3 * 64.
    QCOMPARE(quantize_nf4(torch::randn({2, 96})).n_blocks(), int64_t(3));

    const auto nf4 = std::make_shared<const NF4Weight>(quantize_nf4(torch::randn({16, 64})));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, linear_nf4(torch::randn({3, 32}), nf4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, linear_nf4(torch::randn({3, 64}), nullptr));
  }
};

TB_TEST(TestNf4)
#include "test_nf4.moc"
