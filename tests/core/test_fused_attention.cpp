// The compiled step's attention kernels against the eager composition of models/: the fused rotary
// against models::apply_rotary, the blockwise causal attention against models::grouped_query_attention
// with the causal mask (odd T, T below one block, GQA and MQA, B > 1, fp32 and bf16), the residual
// RMSNorm against x + r then models::RMSNorm; forward and every input's gradient. Also: the attention
// node saves no [T, T] tensor, the plain-causal check, and the whole compiled attention block against
// MultiHeadAttention::forward (and its eager fallback for other masks).
#include <QtTest>

#include "test_main.h"

#include <array>
#include <chrono>
#include <functional>
#include <tuple>

#include <torch/torch.h>

#include "compile/fused_attention.h"
#include "compile/fused_kernels.h"
#include "models/layers.h"
#include "models/transformer.h"

namespace {

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

#define VERIFY_CLOSE(got, want, tol)                                                        \
  do {                                                                                      \
    const double e_ = rel_err(got, want);                                                   \
    if (qEnvironmentVariableIsSet("TB_PRINT_ERRORS")) qInfo("%s: %.3g", #got, e_);          \
    QVERIFY2(e_ <= (tol), (std::string(#got) + " rel err " + std::to_string(e_)).c_str()); \
  } while (0)

torch::Tensor causal_blocked(int64_t t) { return torch::ones({t, t}, torch::kBool).triu(1); }

torch::Tensor leaf(torch::IntArrayRef shape, torch::ScalarType dtype) {
  return torch::randn(shape).to(dtype).requires_grad_(true);
}

torch::Tensor take_grad(torch::Tensor& t) {
  auto g = t.grad().clone();
  t.mutable_grad() = torch::Tensor();
  return g;
}

}  // namespace

class TestFusedAttention : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void rotaryMatchesEager_data() {
    QTest::addColumn<QList<qint64>>("shape");  // B, T, H, D
    QTest::addColumn<bool>("per_batch_positions");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("fp32 2x5x3x8") << QList<qint64>{2, 5, 3, 8} << false << false;
    QTest::newRow("fp32 D=6") << QList<qint64>{1, 7, 2, 6} << false << false;
    QTest::newRow("fp32 packed positions [B, T]") << QList<qint64>{3, 6, 2, 10} << true << false;
    QTest::newRow("bf16 2x9x4x16") << QList<qint64>{2, 9, 4, 16} << false << true;
  }
  void rotaryMatchesEager() {
    QFETCH(QList<qint64>, shape);
    QFETCH(bool, per_batch_positions);
    QFETCH(bool, bf16);
    torch::manual_seed(11);
    const int64_t B = shape[0], T = shape[1], H = shape[2], D = shape[3];
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    tb::models::RotaryTables tables(D, 10000.0, std::nullopt, 64);
    torch::Tensor cos, sin;
    if (per_batch_positions) std::tie(cos, sin) = tables.at(torch::randint(0, 60, {B, T}, torch::kLong));
    else std::tie(cos, sin) = tables.first(T, torch::kCPU);
    auto x = leaf({B, T, H, D}, dtype);  // the projection's layout
    const auto up = torch::randn({B, T, H, D}).to(dtype);

    (tb::models::apply_rotary(x.transpose(1, 2), cos, sin).transpose(1, 2) * up).sum().backward();
    const auto eager = tb::models::apply_rotary(x.transpose(1, 2), cos, sin).transpose(1, 2).detach();
    const auto eager_dx = take_grad(x);
    auto fused = tb::compile::fused_rotary(x, cos, sin);
    (fused * up).sum().backward();

    const double tol = bf16 ? 1e-2 : 1e-6;  // bf16: one rounding of the result either way
    QCOMPARE(fused.scalar_type(), dtype);
    QVERIFY(fused.is_contiguous());
    VERIFY_CLOSE(fused, eager, tol);
    VERIFY_CLOSE(x.grad(), eager_dx, tol);
  }

  void attentionMatchesEager_data() {
    QTest::addColumn<QList<qint64>>("shape");  // B, H, KV, T, D
    QTest::addColumn<int>("block");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("MHA, T=37 (odd) in blocks of 16") << QList<qint64>{2, 4, 4, 37, 8} << 16 << false;
    QTest::newRow("GQA 4 on 2, T=37 in blocks of 8") << QList<qint64>{2, 4, 2, 37, 8} << 8 << false;
    QTest::newRow("MQA 4 on 1, T=50, D=6") << QList<qint64>{1, 4, 1, 50, 6} << 16 << false;
    QTest::newRow("T=5 below one block of 64") << QList<qint64>{2, 4, 2, 5, 8} << 64 << false;
    QTest::newRow("T=1") << QList<qint64>{1, 2, 1, 1, 4} << 8 << false;
    QTest::newRow("T=32, whole blocks of 16") << QList<qint64>{3, 4, 2, 32, 16} << 16 << false;
    QTest::newRow("block of 1") << QList<qint64>{1, 2, 2, 9, 4} << 1 << false;
    QTest::newRow("bf16 GQA 4 on 2, T=29") << QList<qint64>{2, 4, 2, 29, 16} << 8 << true;
    QTest::newRow("bf16 MQA, T=40") << QList<qint64>{1, 4, 1, 40, 8} << 16 << true;
    // Past 512 keys a query tile's row spans two key tiles: the online softmax rescales.
    QTest::newRow("T=600 over two key tiles, blocks of 64") << QList<qint64>{1, 2, 1, 600, 8} << 64 << false;
    QTest::newRow("T=700, blocks of 100 (key tiles off the block edges)") << QList<qint64>{1, 2, 2, 700, 8} << 100 << false;
    QTest::newRow("bf16 T=530 over two key tiles") << QList<qint64>{1, 2, 1, 530, 16} << 128 << true;
  }
  void attentionMatchesEager() {
    QFETCH(QList<qint64>, shape);
    QFETCH(int, block);
    QFETCH(bool, bf16);
    torch::manual_seed(12);
    const int64_t B = shape[0], H = shape[1], KV = shape[2], T = shape[3], D = shape[4];
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    // Leaves in the projections' [B, T, heads, D] layout; both paths read them as strided [B, heads, T, D].
    auto q = leaf({B, T, H, D}, dtype), k = leaf({B, T, KV, D}, dtype), v = leaf({B, T, KV, D}, dtype);
    const auto up = torch::randn({B, T, H, D});
    const double scale = 1.0 / std::sqrt(double(D));

    // The reference: eager attention in fp32 (for bf16, on the same bf16-rounded inputs).
    auto q32 = q.detach().to(torch::kFloat).requires_grad_(true);
    auto k32 = k.detach().to(torch::kFloat).requires_grad_(true);
    auto v32 = v.detach().to(torch::kFloat).requires_grad_(true);
    const auto eager = tb::models::grouped_query_attention(q32.transpose(1, 2), k32.transpose(1, 2), v32.transpose(1, 2),
                                                           causal_blocked(T), scale)
                           .transpose(1, 2);
    (eager * up).sum().backward();

    for (auto backend : {tb::compile::GemmBackend::aten, tb::compile::GemmBackend::onednn}) {
      qInfo("tile products: %s", tb::compile::gemm_backend_name(backend).c_str());
      for (auto* t : {&q, &k, &v}) t->mutable_grad() = torch::Tensor();
      auto fused =
          tb::compile::fused_causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block, backend);
      QVERIFY(fused.sizes() == torch::IntArrayRef({B, T, H, D}));
      QCOMPARE(fused.scalar_type(), dtype);
      (fused.to(torch::kFloat) * up).sum().backward();

      // fp32: BLAS tiles and the online softmax reassociate sums only. bf16: inputs and gradients are
      // bf16, computed in fp32 inside, so the result carries bf16 roundings (~4e-3 each).
      const double tol = bf16 ? 1.5e-2 : 1e-5;
      VERIFY_CLOSE(fused, eager, tol);
      if (T == 1) {
        // One key: the softmax is constant 1, so q and k get no gradient (up to rounding of dP - rowsum(dO*O)).
        QVERIFY(q32.grad().abs().max().item<double>() == 0.0);
        QVERIFY(q.grad().abs().max().item<double>() < 1e-6);
        QVERIFY(k.grad().abs().max().item<double>() < 1e-6);
      } else {
        VERIFY_CLOSE(q.grad(), q32.grad(), tol);
        VERIFY_CLOSE(k.grad(), k32.grad(), tol);
      }
      VERIFY_CLOSE(v.grad(), v32.grad(), tol);
      QCOMPARE(q.grad().scalar_type(), dtype);
    }
  }

  // A sliding window (Gemma 2/3, Mistral, Phi-3): query t sees keys t - W < j <= t; the kernel skips the
  // key tiles before a query tile's window (forward) and the query tiles past a key tile's reach (backward).
  void slidingWindowMatchesEager_data() {
    QTest::addColumn<QList<qint64>>("shape");  // B, H, KV, T, D
    QTest::addColumn<int>("block");
    QTest::addColumn<int>("window");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("W=7, T=37 in blocks of 8") << QList<qint64>{2, 4, 2, 37, 8} << 8 << 7 << false;
    QTest::newRow("W=1: each query sees itself") << QList<qint64>{1, 2, 1, 19, 4} << 4 << 1 << false;
    QTest::newRow("W=16 = block") << QList<qint64>{1, 4, 1, 64, 8} << 16 << 16 << false;
    QTest::newRow("W=100, T=600 over two key tiles") << QList<qint64>{1, 2, 1, 600, 8} << 64 << 100 << false;
    QTest::newRow("W=530, T=700: windows across key tiles") << QList<qint64>{1, 2, 2, 700, 8} << 100 << 530 << false;
    QTest::newRow("bf16 W=33, T=530") << QList<qint64>{1, 4, 2, 530, 16} << 128 << 33 << true;
  }
  void slidingWindowMatchesEager() {
    QFETCH(QList<qint64>, shape);
    QFETCH(int, block);
    QFETCH(int, window);
    QFETCH(bool, bf16);
    torch::manual_seed(14);
    const int64_t B = shape[0], H = shape[1], KV = shape[2], T = shape[3], D = shape[4];
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    auto q = leaf({B, T, H, D}, dtype), k = leaf({B, T, KV, D}, dtype), v = leaf({B, T, KV, D}, dtype);
    const auto up = torch::randn({B, T, H, D});
    const auto pos = torch::arange(T);
    const auto blocked = causal_blocked(T).logical_or(pos.unsqueeze(0).le(pos.unsqueeze(1) - window));
    auto q32 = q.detach().to(torch::kFloat).requires_grad_(true);
    auto k32 = k.detach().to(torch::kFloat).requires_grad_(true);
    auto v32 = v.detach().to(torch::kFloat).requires_grad_(true);
    const auto eager = tb::models::grouped_query_attention(q32.transpose(1, 2), k32.transpose(1, 2), v32.transpose(1, 2),
                                                           blocked, 1.0 / std::sqrt(double(D)))
                           .transpose(1, 2);
    (eager * up).sum().backward();
    for (auto backend : {tb::compile::GemmBackend::aten, tb::compile::GemmBackend::onednn}) {
      for (auto* t : {&q, &k, &v}) t->mutable_grad() = torch::Tensor();
      auto fused = tb::compile::fused_causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block,
                                                       backend, window);
      (fused.to(torch::kFloat) * up).sum().backward();
      const double tol = bf16 ? 1.5e-2 : 1e-5;
      VERIFY_CLOSE(fused, eager, tol);
      if (window == 1) {
        // One key per query: the softmax is constant 1, so q and k get no gradient (up to rounding).
        QVERIFY(q.grad().abs().max().item<double>() < 1e-6);
        QVERIFY(k.grad().abs().max().item<double>() < 1e-6);
      } else {
        VERIFY_CLOSE(q.grad(), q32.grad(), tol);
        VERIFY_CLOSE(k.grad(), k32.grad(), tol);
      }
      VERIFY_CLOSE(v.grad(), v32.grad(), tol);
    }
    // The window really bites here: plain causal attention gives another result.
    if (window < T - 1) {
      const auto causal = tb::compile::fused_causal_attention(q.detach().transpose(1, 2), k.detach().transpose(1, 2),
                                                              v.detach().transpose(1, 2), block);
      QVERIFY(rel_err(causal, eager) > 1e-3);
    }
  }

  // Backward recomputes the scores: the node keeps q, k, v, the output and one logsumexp per query
  // row, nothing of T x T.
  void attentionSavesNoScoreMatrix() {
    torch::manual_seed(13);
    const int64_t B = 1, H = 2, KV = 1, T = 96, D = 8;
    auto q = leaf({B, H, T, D}, torch::kFloat), k = leaf({B, KV, T, D}, torch::kFloat), v = leaf({B, KV, T, D}, torch::kFloat);
    const auto out = tb::compile::fused_causal_attention(q, k, v, 32);
    const auto saved = tb::compile::attention_saved_tensors(out);
    QVERIFY(!saved.empty());
    int64_t total = 0;
    for (const auto& t : saved) {
      QVERIFY2(t.numel() < T * T, ("a saved tensor of " + std::to_string(t.numel()) + " elements").c_str());
      total += t.numel();
    }
    QCOMPARE(total, q.numel() + k.numel() + v.numel() + out.numel() + B * H * T);
    // Not an attention output: nothing to report.
    QVERIFY(tb::compile::attention_saved_tensors(q * 2).empty());
  }

  // Not a check: forward + backward time of a stories model's attention block, eager module against
  // compiled_attention, interleaved (the machine is shared and noisy), at the bench shapes; printed
  // when TB_ATTENTION_TIMING is set (to bf16 for bf16 weights; the tiles' products through oneDNN
  // when this build has it, as the bench's plans choose).
  void attentionTiming() {
    if (!qEnvironmentVariableIsSet("TB_ATTENTION_TIMING")) QSKIP("set TB_ATTENTION_TIMING to time");
    const auto dtype = qgetenv("TB_ATTENTION_TIMING") == "bf16" ? torch::kBFloat16 : torch::kFloat;
    const auto backend = tb::compile::onednn_available() ? tb::compile::GemmBackend::onednn : tb::compile::GemmBackend::aten;
    using Clock = std::chrono::steady_clock;
    for (const auto& [preset, B, T] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
             {"llama2_stories15m", 4, 256}, {"llama2_stories110m", 2, 512}}) {
      auto args = *tb::models::preset_args(preset);
      args.num_layers = 1;
      auto model = tb::models::build_decoder(args);
      tb::models::init_weights(*model, 1);
      model->to(dtype);
      auto& attn = *model->layer(0).attn;
      const auto pos = model->make_positions(B, T, {}, {}, torch::kCPU);
      auto x = leaf({B, T, args.embed_dim}, dtype);
      const auto up = torch::randn({B, T, args.embed_dim}).to(dtype);
      auto once = [&](const std::function<torch::Tensor()>& f) {
        const auto start = Clock::now();
        (f() * up).sum().backward();
        return std::chrono::duration<double>(Clock::now() - start).count() * 1e3;
      };
      for (int64_t block : {64, 128, 256}) {
        double eager = 1e9, fused = 1e9;
        for (int i = 0; i < 4; ++i) {
          eager = std::min(eager, once([&] { return attn.forward(x, pos); }));
          fused = std::min(fused, once([&] { return tb::compile::compiled_attention(attn, x, pos, block, backend); }));
        }
        qInfo("%s %s B%lld T%lld: eager %.1f ms, fused (block %lld, %s) %.1f ms", preset.c_str(),
              c10::toString(dtype), (long long)B, (long long)T, eager, (long long)block,
              tb::compile::gemm_backend_name(backend).c_str(), fused);
      }
    }
  }

  void addRmsNormMatchesEager_data() {
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<bool>("use_h");
    QTest::addColumn<bool>("use_n");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("fp32 3x5x7, both outputs used") << QList<qint64>{3, 5, 7} << true << true << false;
    QTest::newRow("fp32 5x37 (lanes + tail)") << QList<qint64>{5, 37} << true << true << false;
    QTest::newRow("fp32 only the norm used") << QList<qint64>{4, 6, 20} << false << true << false;
    QTest::newRow("fp32 only the sum used") << QList<qint64>{4, 6, 20} << true << false << false;
    QTest::newRow("bf16 4x9x40") << QList<qint64>{4, 9, 40} << true << true << true;
  }
  void addRmsNormMatchesEager() {
    QFETCH(QList<qint64>, shape);
    QFETCH(bool, use_h);
    QFETCH(bool, use_n);
    QFETCH(bool, bf16);
    torch::manual_seed(14);
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    tb::models::RMSNorm norm(dims.back(), 1e-5);
    {
      torch::NoGradGuard g;
      norm->scale.uniform_(0.5, 1.5);
    }
    norm->to(dtype);
    auto x = (torch::randn(dims) * 2).to(dtype).requires_grad_(true);
    auto r = torch::randn(dims).to(dtype).requires_grad_(true);
    auto scale = norm->scale.detach().clone().requires_grad_(true);
    const auto up_h = torch::randn(dims).to(dtype), up_n = torch::randn(dims).to(dtype);
    auto loss_of = [&](const torch::Tensor& h, const torch::Tensor& n) {
      auto loss = torch::zeros({}, dtype);
      if (use_h) loss = loss + (h * up_h).sum();
      if (use_n) loss = loss + (n * up_n).sum();
      return loss;
    };

    const auto eager_h = x + r;
    const auto eager_n = norm->forward(eager_h);
    loss_of(eager_h, eager_n).backward();
    const auto dx = take_grad(x), dr = take_grad(r);
    const auto dscale = norm->scale.grad().defined() ? norm->scale.grad().clone() : torch::zeros_like(scale);
    const auto [h, n] = tb::compile::fused_add_rms_norm(x, r, scale, 1e-5);
    loss_of(h, n).backward();

    const double tol = bf16 ? 2e-2 : 1e-5;  // bf16: the eager norm multiplies by the scale in bf16
    QCOMPARE(h.scalar_type(), dtype);
    QCOMPARE(n.scalar_type(), dtype);
    QVERIFY(torch::equal(h, eager_h));  // the sum is the same rounding of the same two numbers
    VERIFY_CLOSE(n, eager_n, tol);
    VERIFY_CLOSE(x.grad(), dx, tol);
    VERIFY_CLOSE(r.grad(), dr, tol);
    if (use_n) VERIFY_CLOSE(scale.grad(), dscale, tol);
    else QVERIFY(!scale.grad().defined() || scale.grad().abs().max().item<double>() == 0.0);
  }

  void plainCausalIsRecognised() {
    auto args = *tb::models::preset_args("llama_tiny_test");
    auto model = tb::models::build_decoder(args);
    const int64_t T = 9;
    QVERIFY(tb::compile::is_plain_causal(model->make_positions(2, T, {}, {}, torch::kCPU), T));
    // Packed samples: per-row positions, still the causal mask.
    const auto packed = torch::arange(T, torch::kLong).remainder(4).unsqueeze(0).repeat({2, 1});
    QVERIFY(tb::compile::is_plain_causal(model->make_positions(2, T, packed, {}, torch::kCPU), T));
    // A caller's mask that is not the causal one.
    auto mask = torch::ones({T, T}, torch::kBool).tril();
    mask[5][0].fill_(false);
    QVERIFY(!tb::compile::is_plain_causal(model->make_positions(2, T, {}, mask, torch::kCPU), T));
    // The KV cache's positions.
    model->setup_caches(2, torch::kFloat, 32);
    QVERIFY(!tb::compile::is_plain_causal(model->make_positions(2, T, {}, {}, torch::kCPU), T));
  }

  // The whole attention block (projections, rotation, attention, output projection) against the
  // module's eager forward, on a GQA model; and the eager fallback for a mask that is not causal.
  void compiledAttentionMatchesModule_data() {
    QTest::addColumn<bool>("custom_mask");
    QTest::newRow("causal") << false;
    QTest::newRow("custom mask: eager fallback") << true;
  }
  void compiledAttentionMatchesModule() {
    QFETCH(bool, custom_mask);
    torch::manual_seed(15);
    auto args = *tb::models::preset_args("llama_tiny_test");
    auto model = tb::models::build_decoder(args);
    tb::models::init_weights(*model, 3);
    auto& attn = *model->layer(0).attn;
    const int64_t B = 3, T = 21;
    torch::Tensor mask;
    if (custom_mask) {
      mask = torch::ones({T, T}, torch::kBool).tril();
      mask.select(1, 0).fill_(false);
      mask[0][0].fill_(true);
    }
    const auto pos = model->make_positions(B, T, {}, mask, torch::kCPU);
    auto x = leaf({B, T, args.embed_dim}, torch::kFloat);
    const auto up = torch::randn({B, T, args.embed_dim});
    const auto params = attn.parameters();

    const auto eager = attn.forward(x, pos);
    (eager * up).sum().backward();
    const auto dx = take_grad(x);
    std::vector<torch::Tensor> dparams;
    for (auto p : params) dparams.push_back(take_grad(p));
    const auto fused = tb::compile::compiled_attention(attn, x, pos, 8);
    (fused * up).sum().backward();

    VERIFY_CLOSE(fused, eager, 1e-5);
    VERIFY_CLOSE(x.grad(), dx, 1e-5);
    for (size_t i = 0; i < params.size(); ++i) VERIFY_CLOSE(params[i].grad(), dparams[i], 1e-5);
    // The fallback is the module's own forward; the fused path is not (its node is the projection's).
    if (custom_mask) QVERIFY(torch::equal(fused, eager));
  }
};

TB_TEST(TestFusedAttention)
#include "test_fused_attention.moc"
