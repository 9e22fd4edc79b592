// compile: true. Every fused kernel's forward and backward against the eager composition (odd sizes,
// GQA, fp32 and bf16); the `_orig_mod` wrapper's names and the checkpoint round trip both ways,
// bitwise; compiled recipe runs against eager ones, the plan cache hit, and the forced fallback.
#include <QtTest>

#include "test_main.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include <torch/torch.h>

#include "checkpoint/hf_checkpointer.h"
#include "compile/compiled_decoder.h"
#include "compile/element_access.h"
#include "compile/fused_kernels.h"
#include "components/builtin.h"
#include "config/config.h"
#include "models/layers.h"
#include "models/transformer.h"
#include "recipe.h"
#include "recipe_test_support.h"
#include "training/optim.h"
#include "models/loss.h"

namespace fs = std::filesystem;

namespace {

using tbtest::CollectingLogger;

// A compiled fp32 run's step losses against eager's, relative: 1e-7 to 3e-7 observed (fused sums in
// another order); a regression far smaller than a wrong kernel still fails.
constexpr double kLossTolerance = 1e-5;

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

class TestCompile : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

  tb::training::RunResult run(const QString& output_dir, const std::string& recipe, const std::vector<std::string>& overrides,
                               CollectingLogger& logger) {
    tbtest::TinyConfig config;
    if (recipe == "lora_finetune_single_device") {
      config.lora("tunebench.models.lora_llama_tiny_test");
      config.extra = "save_adapter_weights_only: true\n";
    }
    tb::training::RunControl control;
    return tbtest::run_recipe(recipe, config.text(output_dir.toStdString()), overrides, logger, control);
  }

  static nlohmann::json compileEvent(const CollectingLogger& logger) {
    for (const auto& e : logger.events)
      if (e.value("event", "") == "compile") return e;
    return {};
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // The plan cache of these tests lives in the test's own folder.
    qputenv("XDG_CACHE_HOME", tmp_.filePath("cache").toUtf8());
    qunsetenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
  }

  void instructionSetIsKnown() {
    const auto isa = tb::compile::instruction_set();
    QVERIFY2(isa == "avx512" || isa == "avx2" || isa == "scalar", isa.c_str());
  }

  void rmsNormMatchesEager_data() {
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("fp32 3x5x7") << QList<qint64>{3, 5, 7} << false;
    QTest::newRow("fp32 33x64") << QList<qint64>{33, 64} << false;
    QTest::newRow("fp32 one row of 3") << QList<qint64>{1, 1, 3} << false;
    QTest::newRow("fp32 5x37 (lanes + tail)") << QList<qint64>{5, 37} << false;
    QTest::newRow("bf16 4x9x40") << QList<qint64>{4, 9, 40} << true;
    QTest::newRow("bf16 70x300 (threads, lanes + tail)") << QList<qint64>{70, 300} << true;
  }
  void rmsNormMatchesEager() {
    QFETCH(QList<qint64>, shape);
    QFETCH(bool, bf16);
    torch::manual_seed(1);
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    tb::models::RMSNorm norm(dims.back(), 1e-5);
    { torch::NoGradGuard g; norm->scale.uniform_(0.5, 1.5); }
    norm->to(dtype);
    auto x = (torch::randn(dims) * 3).to(dtype).requires_grad_(true);
    auto scale = norm->scale.detach().clone().requires_grad_(true);
    const auto up = torch::randn(dims).to(dtype);

    auto eager = norm->forward(x);
    (eager * up).sum().backward();
    const auto eager_dx = x.grad().clone(), eager_dscale = norm->scale.grad().clone();
    x.mutable_grad() = torch::Tensor();
    auto fused = tb::compile::fused_rms_norm(x, scale, 1e-5);
    (fused * up).sum().backward();

    const double tol = bf16 ? 2e-2 : 1e-5;
    QVERIFY2(rel_err(fused, eager) < tol, std::to_string(rel_err(fused, eager)).c_str());
    QVERIFY2(rel_err(x.grad(), eager_dx) < tol, std::to_string(rel_err(x.grad(), eager_dx)).c_str());
    QVERIFY2(rel_err(scale.grad(), eager_dscale) < tol, std::to_string(rel_err(scale.grad(), eager_dscale)).c_str());
    QCOMPARE(fused.scalar_type(), dtype);
    if (bf16) {  // as for SwiGLU: the fp32 kernel on the widened input, rounded
      torch::NoGradGuard no_grad;
      QVERIFY(torch::equal(fused, tb::compile::fused_rms_norm(x.to(torch::kFloat), scale.to(torch::kFloat), 1e-5).to(dtype)));
    }
  }

  void swigluMatchesEager_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<double>("spread");
    QTest::newRow("fp32") << false << QList<qint64>{3, 7, 13} << 4.0;
    QTest::newRow("bf16") << true << QList<qint64>{3, 7, 13} << 4.0;
    // Several threads' spans with a tail, and gates past the exponential's clamp (|a| > 88).
    QTest::newRow("fp32 16386 gates, wide") << false << QList<qint64>{2, 3, 2731} << 40.0;
    QTest::newRow("bf16 16386 gates, wide") << true << QList<qint64>{2, 3, 2731} << 40.0;
  }
  void swigluMatchesEager() {
    QFETCH(bool, bf16);
    QFETCH(QList<qint64>, shape);
    QFETCH(double, spread);
    torch::manual_seed(2);
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    auto a = (torch::randn(dims) * spread).to(dtype).requires_grad_(true);
    auto b = torch::randn(dims).to(dtype).requires_grad_(true);
    const auto up = torch::randn(dims).to(dtype);
    auto eager = torch::silu(a) * b;
    (eager * up).sum().backward();
    const auto da = a.grad().clone(), db = b.grad().clone();
    a.mutable_grad() = torch::Tensor();
    b.mutable_grad() = torch::Tensor();
    auto fused = tb::compile::fused_swiglu(a, b);
    (fused * up).sum().backward();
    const double tol = bf16 ? 2e-2 : 1e-5;
    QVERIFY(rel_err(fused, eager) < tol);
    QVERIFY2(rel_err(a.grad(), da) < tol, std::to_string(rel_err(a.grad(), da)).c_str());
    QVERIFY2(rel_err(b.grad(), db) < tol, std::to_string(rel_err(b.grad(), db)).c_str());
    // bf16 is read and written in place and computed in fp32: exactly the fp32 kernel's result on the
    // widened inputs, rounded to nearest even as ATen rounds.
    if (bf16) {
      torch::NoGradGuard no_grad;
      const auto widened = tb::compile::fused_swiglu(a.to(torch::kFloat), b.to(torch::kFloat));
      QVERIFY(torch::equal(fused, widened.to(dtype)));
    }
  }

  void linearCrossEntropyMatchesEager_data() {
    QTest::addColumn<int>("chunk");
    QTest::addColumn<bool>("frozen_weight");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<double>("loss_scale");  // the gradient that reaches the loss; 1: a plain backward()
    QTest::newRow("chunks of 8 (37 rows)") << 8 << false << false << 2.5;
    QTest::newRow("one chunk") << 1000 << false << false << 2.5;
    QTest::newRow("one chunk, plain backward") << 1000 << false << false << 1.0;
    QTest::newRow("frozen weight") << 5 << true << false << 2.5;
    QTest::newRow("bf16") << 16 << false << true << 2.5;
    QTest::newRow("bf16 one chunk, plain backward") << 1000 << false << true << 1.0;
  }
  void linearCrossEntropyMatchesEager() {
    QFETCH(int, chunk);
    QFETCH(bool, frozen_weight);
    QFETCH(bool, bf16);
    QFETCH(double, loss_scale);
    torch::manual_seed(3);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    const int64_t n = 37, d = 19, v = 53;
    auto h = torch::randn({n, d}).to(dtype).requires_grad_(true);
    auto w = (torch::randn({v, d}) * 0.5).to(dtype).requires_grad_(!frozen_weight);
    auto labels = torch::randint(0, v, {n}, torch::kLong);
    labels.index_put_({torch::tensor({0, 5, 36}, torch::kLong)}, -100);  // masked rows

    auto eager = tb::models::cross_entropy_sum(torch::mm(h, w.t()), labels, -100);
    (eager * loss_scale).backward();
    const auto dh = h.grad().clone();
    const auto dw = frozen_weight ? torch::Tensor() : w.grad().clone();
    for (auto backend : {tb::compile::GemmBackend::aten, tb::compile::GemmBackend::onednn}) {
      h.mutable_grad() = torch::Tensor();
      if (!frozen_weight) w.mutable_grad() = torch::Tensor();
      auto fused = tb::compile::fused_linear_cross_entropy(h, w, labels, -100, chunk, backend);
      loss_scale == 1.0 ? fused.backward() : (fused * loss_scale).backward();

      const double tol = bf16 ? 2e-2 : 1e-5;
      const auto be = tb::compile::gemm_backend_name(backend) + ": ";
      QVERIFY2(std::abs(fused.item<double>() - eager.item<double>()) <= tol * std::abs(eager.item<double>()),
               (be + std::to_string(fused.item<double>()) + " vs " + std::to_string(eager.item<double>())).c_str());
      QVERIFY2(rel_err(h.grad(), dh) < tol, (be + std::to_string(rel_err(h.grad(), dh))).c_str());
      QCOMPARE(h.grad().scalar_type(), dtype);
      if (frozen_weight) QVERIFY(!w.grad().defined());
      else QCOMPARE(w.grad().scalar_type(), dtype);
      if (frozen_weight) QVERIFY(!w.grad().defined());
      else QVERIFY2(rel_err(w.grad(), dw) < tol, (be + std::to_string(rel_err(w.grad(), dw))).c_str());
      // Ignored rows get no gradient.
      QCOMPARE(h.grad()[5].abs().max().item<double>(), 0.0);
      // oneDNN's bf16 products round the logits to bf16 as eager's are before its fp32 loss, so the
      // loss differs from eager's by the sums' order only (unrounded fp32 logits are 3e-5 to 6e-5 off here).
      if (bf16 && backend == tb::compile::GemmBackend::onednn && tb::compile::onednn_available())
        QVERIFY2(std::abs(fused.item<double>() - eager.item<double>()) <= 1e-5 * std::abs(eager.item<double>()),
                 (std::to_string(fused.item<double>()) + " vs " + std::to_string(eager.item<double>())).c_str());
    }
  }

  // The vector max of the softmax rows: every length around the 16-lane blocks, the max in the block
  // part or the tail, bf16 rows widened on the way; against std::max_element.
  void rowMaxOfFp32AndBf16Rows() {
    namespace c = tb::compile;
    QCOMPARE(c::max_of(static_cast<const float*>(nullptr), 0), -std::numeric_limits<float>::infinity());
    std::mt19937 gen(5);
    std::normal_distribution<float> normal(0.f, 4.f);
    for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 100, 1000}) {
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> x(n);
        for (auto& v : x) v = c::rounded<c::bf16_bits>(normal(gen) - 50.f);  // all negative
        x[at] = 7.5f;                                                          // the max, exact in bf16
        QCOMPARE(c::max_of(x.data(), n), *std::max_element(x.begin(), x.end()));
        std::vector<c::bf16_bits> b(n);
        for (int64_t i = 0; i < n; ++i) c::store(b[i], x[i]);
        std::vector<float> widened(n, 0.f);
        QCOMPARE(c::max_of(b.data(), n, widened.data()), 7.5f);
        QVERIFY(widened == x);
      }
    }
  }

  void linearCrossEntropyRefusesLabelsOutsideTheVocabulary() {
    const auto h = torch::randn({4, 3}), w = torch::randn({5, 3});
    for (int64_t bad : {5, -1}) {
      const auto labels = torch::tensor({int64_t{0}, int64_t{1}, bad, int64_t{2}}, torch::kLong);
      try {
        tb::compile::fused_linear_cross_entropy(h, w, labels, -100, 2);
        QFAIL("no error for a label outside the vocabulary");
      } catch (const std::exception& e) {
        const std::string what = e.what();
        QVERIFY2(what.find("label " + std::to_string(bad) + " of row 2") != std::string::npos, what.c_str());
      }
    }
    // ignore_index itself is fine.
    QVERIFY(std::isfinite(tb::compile::fused_linear_cross_entropy(h, w, torch::tensor({0, -100, 4, 2}, torch::kLong), -100, 2)
                              .item<double>()));
  }

  // The whole compiled step on a GQA model (4 query heads on 2 kv heads) against eager.
  void compiledStepMatchesEager_data() {
    QTest::addColumn<bool>("tied");
    QTest::addColumn<int>("gemm");
    QTest::newRow("untied head") << false << int(tb::compile::GemmBackend::aten);
    QTest::newRow("tied embeddings") << true << int(tb::compile::GemmBackend::aten);
    QTest::newRow("untied head, oneDNN products") << false << int(tb::compile::GemmBackend::onednn);
    QTest::newRow("tied embeddings, oneDNN products") << true << int(tb::compile::GemmBackend::onednn);
  }
  void compiledStepMatchesEager() {
    QFETCH(bool, tied);
    QFETCH(int, gemm);
    torch::manual_seed(4);
    auto args = *tb::models::preset_args("llama_tiny_test");
    args.tie_word_embeddings = tied;
    auto model = tb::models::build_decoder(args);
    tb::models::init_weights(*model, 9);
    auto compiled = tb::compile::wrap_compile(model);
    compiled->plan.ce_chunk_rows = 7;
    compiled->plan.gemm = static_cast<tb::compile::GemmBackend>(gemm);
    const auto tokens = torch::randint(0, args.vocab_size, {3, 11}, torch::kLong);
    auto labels = torch::roll(tokens, -1, 1);
    labels.select(1, 10).fill_(-100);
    const tb::models::LossSpec spec;

    auto eager = tb::models::token_loss_sum(*model, model->forward_hidden(tokens), labels, spec);
    eager.backward();
    std::vector<torch::Tensor> eager_grads;
    for (auto& p : model->parameters()) {
      eager_grads.push_back(p.grad().clone());
      p.mutable_grad() = torch::Tensor();
    }
    auto hidden = compiled->forward_hidden(tokens);
    QVERIFY(rel_err(hidden, model->forward_hidden(tokens)) < 1e-5);
    auto fused = compiled->token_loss_sum(hidden, labels, spec);
    fused.backward();
    QVERIFY(std::abs(fused.item<double>() - eager.item<double>()) < 1e-5 * eager.item<double>());
    size_t i = 0;
    for (auto& p : model->parameters()) {
      QVERIFY2(rel_err(p.grad(), eager_grads[i]) < 1e-4, std::to_string(rel_err(p.grad(), eager_grads[i])).c_str());
      ++i;
    }
  }

  // torch.compile's contract: the wrapper's names carry `_orig_mod.`, and checkpoints are the same
  // bytes either way and load either way.
  void wrapperCheckpointsAreTheEagerModelsBytes() {
    auto args = *tb::models::preset_args("llama_tiny_test");
    auto model = tb::models::build_decoder(args);
    tb::models::init_weights(*model, 21);
    auto compiled = tb::compile::wrap_compile(model);
    const auto names = compiled->named_parameters();
    QCOMPARE(names.size(), model->named_parameters().size());
    for (const auto& item : names) QVERIFY2(item.key().rfind("_orig_mod.", 0) == 0, item.key().c_str());

    tb::checkpoint::HFCheckpointerOptions opts;
    opts.output_dir = tmp_.filePath("roundtrip").toStdString();
    const tb::checkpoint::FullModelHFCheckpointer checkpointer(opts);
    const fs::path eager_dir = checkpointer.save(tmp_.filePath("roundtrip/eager").toStdString(), *model);
    const fs::path compiled_dir = checkpointer.save(tmp_.filePath("roundtrip/compiled").toStdString(), *compiled, args);
    int files = 0;
    for (const auto& entry : fs::directory_iterator(eager_dir)) {
      const fs::path other = compiled_dir / entry.path().filename();
      QVERIFY2(fs::exists(other), other.c_str());
      QVERIFY2(file_bytes(entry.path()) == file_bytes(other), entry.path().filename().c_str());
      ++files;
    }
    QVERIFY(files >= 2);  // config.json and the weights at least

    // Eager checkpoint into a compiled model, compiled checkpoint into an eager model.
    auto check_loads = [&](const fs::path& dir, torch::nn::Module& into) {
      tb::checkpoint::HFCheckpointerOptions load_opts;
      load_opts.checkpoint_dir = dir.string();
      tb::checkpoint::FullModelHFCheckpointer(load_opts).load_into(into, args, 0);
      auto loaded = into.named_parameters();
      for (const auto& item : model->named_parameters()) {
        const auto* p = loaded.find(item.key());
        if (!p) p = loaded.find("_orig_mod." + item.key());
        QVERIFY2(p, item.key().c_str());
        QVERIFY2(torch::equal(*p, item.value()), item.key().c_str());
      }
    };
    auto fresh_compiled = tb::compile::wrap_compile(tb::models::build_decoder(args));
    check_loads(eager_dir, *fresh_compiled);
    auto fresh_eager = tb::models::build_decoder(args);
    check_loads(compiled_dir, *fresh_eager);
  }

  // The seed's round trip through the recipe: `max_steps_per_epoch=0 epochs=1` saves the starting
  // weights; compiled and eager write the same model files, and a compiled run loads them back.
  void compiledRecipeSavesTheEagerCheckpoint() {
    CollectingLogger eager_log, compiled_log, reload_log;
    const std::string r = "full_finetune_single_device";
    QCOMPARE(run(tmp_.filePath("zero_eager"), r, {"compile=false", "max_steps_per_epoch=0", "epochs=1"}, eager_log).status,
             tb::training::RunStatus::Completed);
    QCOMPARE(run(tmp_.filePath("zero_compiled"), r, {"compile=true", "max_steps_per_epoch=0", "epochs=1"}, compiled_log).status,
             tb::training::RunStatus::Completed);
    const fs::path eager_dir = tmp_.filePath("zero_eager/epoch_0").toStdString();
    const fs::path compiled_dir = tmp_.filePath("zero_compiled/epoch_0").toStdString();
    int compared = 0;
    for (const auto& entry : fs::directory_iterator(eager_dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("model", 0) != 0 && name != "config.json") continue;  // manifests differ in time and config
      QVERIFY2(file_bytes(entry.path()) == file_bytes(compiled_dir / name), name.c_str());
      ++compared;
    }
    QVERIFY(compared >= 2);
    const auto reload = run(tmp_.filePath("zero_reload"), r,
                            {"compile=true", "epochs=1", "max_steps_per_epoch=1",
                             "checkpointer.checkpoint_dir=" + compiled_dir.string()},
                            reload_log);
    QVERIFY2(reload.status == tb::training::RunStatus::Completed, reload.message.c_str());
    QVERIFY2(!reload_log.info_containing(compiled_dir.string()).empty(), "the reload did not read the compiled checkpoint");
  }

  void compiledRunMatchesEagerRun_data() {
    QTest::addColumn<QString>("recipe");
    QTest::addColumn<QString>("extra");
    QTest::newRow("full") << "full_finetune_single_device" << "";
    QTest::newRow("lora") << "lora_finetune_single_device" << "";
    // Dropout draws random masks: the warm-up's two passes must draw the same ones.
    QTest::newRow("lora with dropout") << "lora_finetune_single_device" << "model.lora_dropout=0.1";
  }
  void compiledRunMatchesEagerRun() {
    QFETCH(QString, recipe);
    QFETCH(QString, extra);
    const std::string r = recipe.toStdString();
    const QString tag = QTest::currentDataTag();
    auto with = [&](const std::string& compile) {
      std::vector<std::string> o = {compile};
      if (!extra.isEmpty()) o.push_back(extra.toStdString());
      return o;
    };
    CollectingLogger eager_log, compiled_log, again_log;
    const auto eager = run(tmp_.filePath("eager_" + tag), r, with("compile=false"), eager_log);
    QVERIFY2(eager.status == tb::training::RunStatus::Completed, eager.message.c_str());
    const auto compiled = run(tmp_.filePath("compiled_" + tag), r, with("compile=true"), compiled_log);
    QVERIFY2(compiled.status == tb::training::RunStatus::Completed, compiled.message.c_str());
    QCOMPARE(compiled_log.steps.size(), eager_log.steps.size());
    QCOMPARE(eager_log.steps.size(), size_t(6));
    double worst = 0;
    for (size_t i = 0; i < eager_log.steps.size(); ++i) {
      const double a = eager_log.steps[i].loss, b = compiled_log.steps[i].loss;
      worst = std::max(worst, std::abs(a - b) / std::abs(a));
      QVERIFY2(std::abs(a - b) <= kLossTolerance * std::abs(a),
               (std::to_string(i) + ": " + std::to_string(a) + " vs " + std::to_string(b)).c_str());
      QCOMPARE(int(compiled_log.steps[i].phase), int(i == 0 ? tb::training::Phase::Warmup : tb::training::Phase::Steady));
      QCOMPARE(int(eager_log.steps[i].phase), int(tb::training::Phase::Steady));
    }
    qInfo("%s: worst step loss rel diff %.2e", qPrintable(tag), worst);
    const auto event = compileEvent(compiled_log);
    QVERIFY2(event.is_object(), "no compile event");
    QCOMPARE(event.value("fallback", true), false);
    QVERIFY(event.value("seconds", 0.0) > 0);
    QVERIFY(compileEvent(eager_log).is_null());

    // The same shape again: the plan comes from the cache (the cache is per process-independent key).
    const auto again = run(tmp_.filePath("again_" + tag), r, with("compile=true"), again_log);
    QVERIFY2(again.status == tb::training::RunStatus::Completed, again.message.c_str());
    QCOMPARE(compileEvent(again_log).value("cache_hit", false), true);
    QVERIFY(again_log.losses() == compiled_log.losses());
    // The event says which plan ran, and the cached plan is the tuned one.
    QVERIFY2(event.contains("plan") && tb::compile::parse_gemm_backend(event["plan"].value("gemm", "")), event.dump().c_str());
    QVERIFY2(compileEvent(again_log)["plan"] == event["plan"], compileEvent(again_log).dump().c_str());
  }

  void planCacheKeepsTheGemmBackend() {
    tb::compile::CompilePlan plan;
    plan.ce_chunk_rows = 512;
    plan.attn_block = 64;
    plan.gemm = tb::compile::GemmBackend::onednn;
    const std::string key = "test key " + tmp_.path().toStdString();
    tb::compile::store_plan(key, plan);
    const auto back = tb::compile::load_cached_plan(key);
    QVERIFY(back);
    QCOMPARE(back->ce_chunk_rows, int64_t(512));
    QCOMPARE(back->attn_block, int64_t(64));
    QCOMPARE(int(back->gemm), int(tb::compile::GemmBackend::onednn));
    QVERIFY(!tb::compile::load_cached_plan(key + " other"));
    // Storing again replaces the plan.
    plan.gemm = tb::compile::GemmBackend::aten;
    tb::compile::store_plan(key, plan);
    QCOMPARE(int(tb::compile::load_cached_plan(key)->gemm), int(tb::compile::GemmBackend::aten));
  }

  // The CPU runs the fused step; any other device is kept eager with a reason that names it.
  void onlyTheCpuHasAFusedBackend() {
    QVERIFY(!tb::compile::unsupported_device_reason(torch::Device(torch::kCPU)));
    const auto cuda = tb::compile::unsupported_device_reason(torch::Device(torch::kCUDA, 0));
    QVERIFY(cuda);
    QVERIFY2(cuda->find("CUDA") != std::string::npos && cuda->find("eager") != std::string::npos, cuda->c_str());
  }

  void forcedMismatchFallsBackToEager() {
    qputenv("TUNEBENCH_COMPILE_FORCE_MISMATCH", "1");
    CollectingLogger eager_log, fallback_log;
    const std::string r = "full_finetune_single_device";
    run(tmp_.filePath("fb_eager"), r, {"compile=false"}, eager_log);
    const auto result = run(tmp_.filePath("fb_compiled"), r, {"compile=true"}, fallback_log);
    qunsetenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
    QVERIFY2(result.status == tb::training::RunStatus::Completed, result.message.c_str());
    const auto event = compileEvent(fallback_log);
    QCOMPARE(event.value("fallback", false), true);
    QVERIFY2(event.value("reason", "").find("forced mismatch") != std::string::npos, event.dump().c_str());
    bool warned = false;
    for (const auto& e : fallback_log.events)
      warned |= e.value("event", "") == "warning" && e.value("message", "").find("falling back to eager") != std::string::npos;
    QVERIFY(warned);
    // After the fallback the run is the eager run, bit for bit.
    QVERIFY(fallback_log.losses() == eager_log.losses());
  }
};

TB_TEST(TestCompile)
#include "test_compile.moc"
