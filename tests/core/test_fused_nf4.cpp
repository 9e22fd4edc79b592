// compile::fused_linear_nf4 (NF4 dequantised tile by tile into the matmul) against x @ dequantize_nf4(W)^T
// and its input gradient against dy @ dequantize_nf4(W), over odd shapes and tiles that do not
// divide them, fp32 and bf16; compile::project() on a QLoRA LoRALinear (with dropout, same seed)
// against the module's own forward, outputs and gradients, and the random stream left where it
// leaves it; other modules passed through; a compiled QLoRA run against the eager one. The fused LoRA
// update (compile/fused_lora.h) on its own against the float64 formulas, odd shapes and ranks.
#include <QtTest>

#include "test_main.h"

#include <memory>
#include <string>

#include <torch/torch.h>

#include "compile/fused_lora.h"
#include "compile/fused_nf4.h"
#include "components/builtin.h"
#include "config/config.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "quant/nf4.h"
#include "recipe.h"
#include "recipe_test_support.h"

namespace {

using tbtest::CollectingLogger;

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

std::string describe(double e) { return std::to_string(e); }

// A QLoRA projection on its own: a LoRALinear with a random (non-zero) lora_b, its base quantised
// by the QLoRA path itself, in `dtype`.
struct QLoRAProjection {
  std::shared_ptr<torch::nn::Module> parent = std::make_shared<torch::nn::Module>();
  tb::peft::LoRALinear lora{nullptr};

  QLoRAProjection(int64_t in, int64_t out, double dropout, torch::ScalarType dtype, bool quantize = true) {
    torch::manual_seed(3);
    lora = parent->register_module("proj", tb::peft::LoRALinear(in, out, 4, 8.0, dropout));
    {
      torch::NoGradGuard no_grad;
      lora->lora_b->weight.normal_(0, 0.1);
    }
    parent->to(dtype);
    if (!quantize) return;
    lora->quantize_base = true;
    tb::peft::quantize_lora_bases(*parent);
  }
};

}  // namespace

class TestFusedNF4 : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

  tb::training::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides, CollectingLogger& logger) {
    tbtest::TinyConfig config;
    config.lora("tunebench.models.qlora_llama_tiny_test", "  lora_dropout: 0.1\n");
    config.epochs = 1;
    config.extra = "save_adapter_weights_only: true\n";
    tb::training::RunControl control;
    return tbtest::run_recipe("lora_finetune_single_device", config.text(output_dir.toStdString()), overrides, logger,
                              control);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CACHE_HOME", tmp_.filePath("cache").toUtf8());
    qunsetenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
  }

  void linearMatchesDequantizedMatmul_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("tile");  // values per tile; 0: the default
    // in = 37: rows start inside blocks and inside bytes; 5 rows a tile (64 = 12 * 5 + 4), 2 columns
    // a tile in backward (37 = 18 * 2 + 1).
    QTest::newRow("fp32 37->64, 185 a tile") << false << 37 << 64 << 185;
    QTest::newRow("fp32 96->50, 672 a tile") << false << 96 << 50 << 672;
    QTest::newRow("fp32 288->200, default tile") << false << 288 << 200 << 0;
    QTest::newRow("fp32 64->3, a row or column a tile") << false << 64 << 3 << 1;
    QTest::newRow("bf16 37->64, 185 a tile") << true << 37 << 64 << 185;
    QTest::newRow("bf16 288->200, default tile") << true << 288 << 200 << 0;
  }
  void linearMatchesDequantizedMatmul() {
    QFETCH(bool, bf16);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(int, tile);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    // fp32: one matmul against many, rounding only. bf16: both round each output to bf16, an ulp
    // apart at most (LibTorch 1.13's bf16 mm is less exact on tiny operands, e.g. 16 rows of x times
    // 2 weight columns: 132 rows keep these tests off it).
    const double tolerance = bf16 ? 5e-3 : 1e-5;
    torch::manual_seed(7);
    auto nf4 = std::make_shared<const tb::quant::NF4Weight>(tb::quant::quantize_nf4(torch::randn({out, in})));
    const auto w = tb::quant::dequantize_nf4(*nf4, dtype);
    const auto x = torch::randn({4, 33, in}).to(dtype).requires_grad_(true);
    const auto dy = torch::randn({4, 33, out}).to(dtype);

    const auto y = tb::compile::fused_linear_nf4(x, nf4, tile);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{4, 33, out}));
    QCOMPARE(y.scalar_type(), dtype);
    const auto want = torch::matmul(x.detach(), w.t());
    const double ey = rel_err(y, want);
    QVERIFY2(ey <= tolerance, describe(ey).c_str());
    y.backward(dy);
    const auto want_dx = torch::matmul(dy, w);
    const double edx = rel_err(x.grad(), want_dx);
    QVERIFY2(edx <= tolerance, describe(edx).c_str());
    qInfo("relative error: y %.3g, dx %.3g", ey, edx);
  }

  // Multiplying by identities reads the dequantised weight back exactly (one product per value, by 1,
  // summed with zeros): forward gives W^T, backward W, bit for bit dequantize_nf4's, through the
  // vector and the scalar dequantisation (odd widths start rows inside blocks and bytes).
  void dequantisationIsExact_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("tile");
    QTest::newRow("fp32 37->64, 185 a tile") << false << 37 << 64 << 185;
    QTest::newRow("fp32 288->200, default tile") << false << 288 << 200 << 0;
    QTest::newRow("bf16 37->64, 185 a tile") << true << 37 << 64 << 185;
    QTest::newRow("bf16 288->200, default tile") << true << 288 << 200 << 0;
    QTest::newRow("bf16 101->96, 3 columns a tile in backward") << true << 101 << 96 << 288;
  }
  void dequantisationIsExact() {
    QFETCH(bool, bf16);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(int, tile);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    torch::manual_seed(8);
    auto nf4 = std::make_shared<const tb::quant::NF4Weight>(
        tb::quant::quantize_nf4(torch::randn({out, in}) * 3, /*block_size=*/32, /*scaler_block_size=*/5));
    const auto w = tb::quant::dequantize_nf4(*nf4, dtype);
    for (auto backend : {tb::compile::GemmBackend::aten, tb::compile::GemmBackend::onednn}) {
      const auto be = tb::compile::gemm_backend_name(backend);
      QVERIFY2(torch::equal(tb::compile::fused_linear_nf4(torch::eye(in).to(dtype), nf4, tile, backend), w.t()),
               be.c_str());
      const auto x = torch::zeros({out, in}).to(dtype).requires_grad_(true);
      tb::compile::fused_linear_nf4(x, nf4, tile, backend).backward(torch::eye(out).to(dtype));  // dx = I W
      QVERIFY2(torch::equal(x.grad(), w), be.c_str());
    }
  }

  void projectMatchesLoRALinear_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<double>("dropout");
    QTest::addColumn<bool>("quantized");
    QTest::addColumn<int>("gemm");
    const int aten = int(tb::compile::GemmBackend::aten), onednn = int(tb::compile::GemmBackend::onednn);
    QTest::newRow("fp32") << false << 0.0 << true << aten;
    QTest::newRow("fp32 dropout") << false << 0.25 << true << aten;
    QTest::newRow("bf16 dropout") << true << 0.25 << true << aten;
    QTest::newRow("fp32 dropout, oneDNN products") << false << 0.25 << true << onednn;
    QTest::newRow("bf16 dropout, oneDNN products") << true << 0.25 << true << onednn;
    QTest::newRow("LoRA (no NF4) dropout, oneDNN products") << false << 0.25 << false << onednn;
    QTest::newRow("LoRA (no NF4) bf16, oneDNN products") << true << 0.0 << false << onednn;
  }
  void projectMatchesLoRALinear() {
    QFETCH(bool, bf16);
    QFETCH(double, dropout);
    QFETCH(bool, quantized);
    QFETCH(int, gemm);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    const double tolerance = bf16 ? 2e-2 : 1e-5;
    QLoRAProjection q(96, 50, dropout, dtype, quantized);
    QCOMPARE(q.lora->quantized_base != nullptr, quantized);
    torch::nn::AnyModule any(q.lora);
    torch::manual_seed(21);
    const auto x0 = torch::randn({2, 7, 96}).to(dtype);
    const auto dy = torch::randn({2, 7, 50}).to(dtype);

    auto pass = [&](bool fused) {
      auto x = x0.clone().requires_grad_(true);
      q.parent->zero_grad();
      torch::manual_seed(99);
      const auto y = fused ? tb::compile::project(any, x, static_cast<tb::compile::GemmBackend>(gemm)) : q.lora->forward(x);
      const auto next_draw = torch::rand({4});  // where the random stream was left
      y.backward(dy);
      return std::vector<torch::Tensor>{y.detach(), x.grad(), q.lora->lora_a->weight.grad().clone(),
                                        q.lora->lora_b->weight.grad().clone(), next_draw};
    };
    const auto eager = pass(false);
    const auto fused = pass(true);
    const char* names[] = {"y", "dx", "d lora_a", "d lora_b"};
    for (int i = 0; i < 4; ++i) {
      const double e = rel_err(fused[i], eager[i]);
      qInfo("%s: relative error %.3g", names[i], e);
      QVERIFY2(e <= tolerance, (std::string(names[i]) + ": " + describe(e)).c_str());
    }
    QVERIFY(torch::equal(fused[4], eager[4]));  // the same random draws, in the same number
  }

  void loraUpdateMatchesFormulas_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("gemm");
    const int aten = int(tb::compile::GemmBackend::aten), onednn = int(tb::compile::GemmBackend::onednn);
    QTest::newRow("fp32 aten, rank 1") << false << 5 << 7 << 3 << 1 << aten;
    QTest::newRow("fp32 oneDNN 33x37->65, rank 5") << false << 33 << 37 << 65 << 5 << onednn;
    QTest::newRow("fp32 oneDNN 130x96->50, rank 8") << false << 130 << 96 << 50 << 8 << onednn;
    QTest::newRow("bf16 oneDNN 130x96->50, rank 8") << true << 130 << 96 << 50 << 8 << onednn;
    QTest::newRow("bf16 aten 66x40->24, rank 3") << true << 66 << 40 << 24 << 3 << aten;
  }
  // y = base + s (x A^T) B^T; with g = dL/dy: d base = g, dB = s g^T (x A^T), dA = s (g B)^T x,
  // dx = s (g B) A, all checked against float64 products of the same values.
  void loraUpdateMatchesFormulas() {
    QFETCH(bool, bf16);
    QFETCH(int, rows);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(int, rank);
    QFETCH(int, gemm);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    const double tolerance = bf16 ? 2e-2 : 1e-5;
    const double scale = 2.5;
    torch::manual_seed(11);
    const auto x = torch::randn({rows, in}).to(dtype).requires_grad_(true);
    const auto a = torch::randn({rank, in}).to(dtype).requires_grad_(true);
    const auto b = torch::randn({out, rank}).to(dtype).requires_grad_(true);
    const auto base_in = torch::randn({rows, out}).to(dtype).requires_grad_(true);
    const auto g = torch::randn({rows, out}).to(dtype);
    // The update writes into `base`: a fresh result of an op, as the base projection's output is.
    const auto base = base_in * 1.0;
    const auto y = tb::compile::fused_lora_update(base, x, a, b, scale, static_cast<tb::compile::GemmBackend>(gemm));
    y.backward(g);

    const auto xd = x.detach().to(torch::kDouble), ad = a.detach().to(torch::kDouble);
    const auto bd = b.detach().to(torch::kDouble), gd = g.to(torch::kDouble);
    const auto xa = xd.mm(ad.t());
    const auto gb = gd.mm(bd);
    const std::vector<std::pair<const char*, std::pair<torch::Tensor, torch::Tensor>>> checks = {
        {"y", {y.detach(), base_in.detach().to(torch::kDouble) + scale * xa.mm(bd.t())}},
        {"d base", {base_in.grad(), gd}},
        {"dB", {b.grad(), scale * gd.t().mm(xa)}},
        {"dA", {a.grad(), scale * gb.t().mm(xd)}},
        {"dx", {x.grad(), scale * gb.mm(ad)}}};
    for (const auto& [what, pair] : checks) {
      QVERIFY2(pair.first.defined(), what);
      QCOMPARE(pair.first.scalar_type(), dtype);
      const double e = rel_err(pair.first, pair.second);
      QVERIFY2(e <= tolerance, (std::string(what) + ": " + describe(e)).c_str());
    }
  }

  void loraUpdateRefusesMismatchedShapes() {
    const auto x = torch::randn({4, 6});
    const auto a = torch::randn({2, 6}), b = torch::randn({5, 2});
    QVERIFY_THROWS_EXCEPTION(c10::Error, tb::compile::fused_lora_update(torch::zeros({4, 4}), x, a, b, 1.0,
                                                                        tb::compile::GemmBackend::aten));
    QVERIFY_THROWS_EXCEPTION(c10::Error, tb::compile::fused_lora_update(torch::zeros({4, 5}), x, torch::randn({2, 5}),
                                                                        b, 1.0, tb::compile::GemmBackend::aten));
  }

  // With ATen products a plain Linear and a LoRALinear over a full-precision base run their own
  // forward, unchanged.
  void projectPassesOtherModulesThrough() {
    torch::manual_seed(2);
    torch::nn::Linear linear(torch::nn::LinearOptions(12, 5).bias(false));
    tb::peft::LoRALinear lora(12, 5, 2, 4.0, 0.0);
    {
      torch::NoGradGuard no_grad;
      lora->lora_b->weight.normal_();
    }
    const auto x = torch::randn({3, 12});
    torch::nn::AnyModule any_linear(linear), any_lora(lora);
    QVERIFY(torch::equal(tb::compile::project(any_linear, x), linear->forward(x)));
    QVERIFY(torch::equal(tb::compile::project(any_lora, x), lora->forward(x)));
    // With oneDNN products the Linear is the same product computed elsewhere.
    const auto via_onednn = tb::compile::project(any_linear, x, tb::compile::GemmBackend::onednn);
    QVERIFY(rel_err(via_onednn, linear->forward(x)) < 1e-6);
    // A module that is neither runs its own forward whatever the backend.
    torch::nn::AnyModule any_relu(torch::nn::ReLU{});
    QVERIFY(torch::equal(tb::compile::project(any_relu, x, tb::compile::GemmBackend::onednn), torch::relu(x)));
  }

  // The whole compiled step of a QLoRA run (LoRA dropout on) against the eager run.
  void compiledQLoRARunMatchesEager() {
    CollectingLogger eager_log, compiled_log;
    const auto eager = run(tmp_.filePath("eager"), {"compile=false"}, eager_log);
    QVERIFY2(eager.status == tb::training::RunStatus::Completed, eager.message.c_str());
    const auto compiled = run(tmp_.filePath("compiled"), {"compile=true"}, compiled_log);
    QVERIFY2(compiled.status == tb::training::RunStatus::Completed, compiled.message.c_str());
    QCOMPARE(compiled_log.steps.size(), size_t(3));
    QCOMPARE(eager_log.steps.size(), size_t(3));
    bool fell_back = true;
    for (const auto& e : compiled_log.events)
      if (e.value("event", "") == "compile") fell_back = e.value("fallback", true);
    QVERIFY(!fell_back);
    double worst = 0;
    for (size_t i = 0; i < 3; ++i) {
      const double a = eager_log.steps[i].loss, b = compiled_log.steps[i].loss;
      worst = std::max(worst, std::abs(a - b) / std::abs(a));
    }
    qInfo("largest relative loss difference: %.3g", worst);
    QVERIFY2(worst <= 1e-4, describe(worst).c_str());
  }
};

TB_TEST(TestFusedNF4)
#include "test_fused_nf4.moc"
