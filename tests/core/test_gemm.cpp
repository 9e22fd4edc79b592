// compile::gemm_into / gemm_linear, both backends (ATen and oneDNN), against a float64 product of the
// same values: a hand-computed case, odd shapes, transposed and row-view layouts, accumulation, bf16
// inputs with fp32 and bf16 results, calls from inside the intra-op workers (as the attention tiles
// make them), and gemm_linear's gradients against torch::linear's.
#include <QtTest>

#include "test_main.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "compile/gemm.h"

namespace {

using tb::compile::GemmBackend;

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

const std::vector<GemmBackend> kBackends = {GemmBackend::aten, GemmBackend::onednn};

std::string name(GemmBackend b) { return tb::compile::gemm_backend_name(b); }

}  // namespace

class TestGemm : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { at::set_num_threads(2); }

  void onednnRunsInThisBuild() {
    // scripts/setup.sh installs libdnnl-dev; without it the compile backend silently loses its GEMMs.
    QVERIFY2(tb::compile::onednn_available(), "built without oneDNN (libdnnl-dev missing at configure time?)");
    QCOMPARE(QString::fromStdString(name(*tb::compile::parse_gemm_backend("onednn"))), QString("onednn"));
    QVERIFY(!tb::compile::parse_gemm_backend("mkl"));
  }

  void handComputedProduct() {
    // [[1, 2, 3], [4, 5, 6]] @ [[1, 0], [0, 1], [2, -1]] = [[7, -1], [16, -1]]
    const auto a = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3});
    const auto b = torch::tensor({1.f, 0.f, 0.f, 1.f, 2.f, -1.f}).view({3, 2});
    const auto want = torch::tensor({7.f, -1.f, 16.f, -1.f}).view({2, 2});
    for (auto be : kBackends) {
      auto c = torch::full({2, 2}, 100.f);
      tb::compile::gemm_into(c, a, b, false, be);
      QVERIFY2(torch::equal(c, want), name(be).c_str());
      tb::compile::gemm_into(c, a, b, true, be);  // c += a @ b
      QVERIFY2(torch::equal(c, want * 2), name(be).c_str());
    }
  }

  void oddShapesAndLayoutsMatchFloat64() {
    torch::manual_seed(0);
    const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {257, 31, 129}, {3, 300, 1}};
    for (auto dtype : {torch::kFloat, torch::kBFloat16})
      for (auto out : {torch::kFloat, dtype})
        for (const auto& s : shapes)
          for (int layout = 0; layout < 8; ++layout)
            for (bool accumulate : {false, true})
              for (auto be : kBackends) {
                const int64_t M = s[0], K = s[1], N = s[2];
                // layout bits: a as a transposed view, b as a transposed view, c a column slice of a wider tensor
                const auto a = (layout & 1) ? torch::randn({K, M}).to(dtype).t() : torch::randn({M, K}).to(dtype);
                const auto b = (layout & 2) ? torch::randn({N, K}).to(dtype).t() : torch::randn({K, N}).to(dtype);
                auto wide = torch::randn({M, N + 3}).to(out);
                auto c = (layout & 4) ? wide.narrow(1, 2, N) : wide.narrow(1, 0, N).contiguous();
                const auto before = c.to(torch::kDouble);
                auto want = at::mm(a.to(torch::kDouble), b.to(torch::kDouble));
                if (accumulate) want += before;
                tb::compile::gemm_into(c, a, b, accumulate, be);
                const double err = rel_err(c, want);
                // oneDNN: fp32 sums, a bf16 result rounded once. ATen's bf16 product is its own (rounded to
                // bf16 even into an fp32 c; its matrix-vector product sums in bf16).
                const bool aten_bf16 = dtype != torch::kFloat && be == GemmBackend::aten;
                const double tol = aten_bf16 ? 1e-1 : out != torch::kFloat ? 8e-3 : 2e-6;
                const std::string what = name(be) + " " + c10::toString(dtype) + "->" + c10::toString(out) + " " +
                                         std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
                                         " layout " + std::to_string(layout) + (accumulate ? " +=" : "") +
                                         ": rel err " + std::to_string(err);
                QVERIFY2(err < tol, what.c_str());
              }
  }

  void sliceNeighboursStayUntouched() {
    auto wide = torch::full({4, 10}, 7.f);
    const auto a = torch::ones({4, 3}), b = torch::ones({3, 5});
    for (auto be : kBackends) {
      wide.fill_(7.f);
      tb::compile::gemm_into(wide.narrow(1, 2, 5), a, b, false, be);
      QVERIFY(torch::equal(wide.narrow(1, 2, 5), torch::full({4, 5}, 3.f)));
      QVERIFY(torch::equal(wide.narrow(1, 0, 2), torch::full({4, 2}, 7.f)));
      QVERIFY(torch::equal(wide.narrow(1, 7, 3), torch::full({4, 3}, 7.f)));
    }
  }

  void emptyInnerDimensionGivesZeros() {
    for (auto be : kBackends) {
      auto c = torch::full({3, 4}, 5.f);
      tb::compile::gemm_into(c, torch::empty({3, 0}), torch::empty({0, 4}), false, be);
      QVERIFY(torch::equal(c, torch::zeros({3, 4})));
      c.fill_(5.f);
      tb::compile::gemm_into(c, torch::empty({3, 0}), torch::empty({0, 4}), true, be);
      QVERIFY(torch::equal(c, torch::full({3, 4}, 5.f)));
    }
  }

  void mismatchedShapesAreRefused() {
    auto c = torch::empty({2, 2});
    QVERIFY_THROWS_EXCEPTION(c10::Error, tb::compile::gemm_into(c, torch::ones({2, 3}), torch::ones({4, 2}), false,
                                                                GemmBackend::onednn));
    QVERIFY_THROWS_EXCEPTION(c10::Error, tb::compile::gemm_into(c, torch::ones({2, 3}), torch::ones({3, 2}).to(torch::kBFloat16),
                                                                false, GemmBackend::onednn));
  }

  void callsFromInsideTheWorkersAgree() {
    // Each worker multiplies its own tiles, as fused_causal_attention does.
    torch::manual_seed(1);
    const auto a = torch::randn({16, 40, 32}), b = torch::randn({16, 32, 24});
    const auto want = at::bmm(a.to(torch::kDouble), b.to(torch::kDouble));
    for (auto be : kBackends) {
      auto c = torch::empty({16, 40, 24});
      at::parallel_for(0, 16, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) tb::compile::gemm_into(c[i], a[i], b[i], false, be);
      });
      QVERIFY2(rel_err(c, want) < 2e-6, name(be).c_str());
    }
  }

  void linearMatchesTorchLinearWithGradients() {
    torch::manual_seed(2);
    for (auto dtype : {torch::kFloat, torch::kBFloat16})
      for (bool frozen : {false, true})
        for (auto be : kBackends) {
          const auto x0 = torch::randn({3, 11, 37}).to(dtype);
          const auto w0 = (torch::randn({29, 37}) * 0.2).to(dtype);
          const auto dy = torch::randn({3, 11, 29}).to(dtype);
          auto x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(!frozen);
          auto xr = x0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(!frozen);
          const auto y = tb::compile::gemm_linear(x, w, be);
          const auto yr = torch::linear(xr, wr);
          (y * dy).sum().backward();
          (yr * dy).sum().backward();
          const double tol = dtype == torch::kFloat ? 2e-6 : 1e-2;
          const std::string what = name(be) + " " + c10::toString(dtype) + (frozen ? " frozen" : "");
          QCOMPARE(y.sizes().vec(), yr.sizes().vec());
          QVERIFY2(y.scalar_type() == dtype, what.c_str());
          QVERIFY2(rel_err(y, yr) < tol, (what + " y").c_str());
          QVERIFY2(rel_err(x.grad(), xr.grad()) < tol, (what + " dx").c_str());
          QVERIFY2(frozen == !w.grad().defined(), (what + " dw defined").c_str());
          if (!frozen) QVERIFY2(rel_err(w.grad(), wr.grad()) < tol, (what + " dw").c_str());
        }
  }

  void linearTakesABroadcastGradient() {
    // sum() hands back an expanded gradient (all strides 0): no unit stride, so ATen takes that product.
    const auto x = torch::randn({5, 7}).requires_grad_(true), w = torch::randn({3, 7}).requires_grad_(true);
    tb::compile::gemm_linear(x, w, GemmBackend::onednn).sum().backward();
    QVERIFY(rel_err(x.grad(), w.sum(0).expand({5, 7})) < 1e-6);
    QVERIFY(rel_err(w.grad(), x.sum(0).expand({3, 7})) < 1e-6);
  }
};

TB_TEST(TestGemm)
#include "test_gemm.moc"
