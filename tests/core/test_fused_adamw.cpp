// compile::FusedAdamW against torch::optim::AdamW: ten steps on parameters of odd sizes (one larger
// than a parallel chunk, one strided, one without a gradient) in two param groups whose lr changes
// every step, with and without weight decay and amsgrad, fp32 and bf16; the optimizer state through
// the recipe's own serialization both ways; and a compiled full fine-tune's checkpoint resumed eager
// (and back) continuing as the uninterrupted run.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <type_traits>

#include <torch/torch.h>

#include "compile/fused_adamw.h"
#include "components/builtin.h"
#include "config/config.h"
#include "recipe.h"
#include "recipe_test_support.h"
#include "training/recipe_state.h"

namespace fs = std::filesystem;

namespace {

using tbtest::CollectingLogger;
using torch::optim::AdamW;
using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;
using torch::optim::OptimizerParamGroup;

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

// How torch's optimizers key a parameter's state (a printed pointer in LibTorch 1.x, the pointer in 2.x).
template <typename StateMap>
typename StateMap::key_type key_of(const StateMap&, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

const AdamWParamState* state_of(const torch::optim::Optimizer& opt, const torch::Tensor& p) {
  const auto it = opt.state().find(key_of(opt.state(), p));
  return it == opt.state().end() ? nullptr : static_cast<const AdamWParamState*>(it->second.get());
}

constexpr size_t kNoGrad = 3;  // the parameter that never gets a gradient

// 7, 33x17, one of 70001 elements (more than two parallel chunks, with a tail), 5x3 without grad and
// a transposed 6x4 (strided: the composed path), in the given dtype.
std::vector<torch::Tensor> make_params(torch::ScalarType dtype) {
  torch::manual_seed(11);
  std::vector<torch::Tensor> out;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{7}, {33, 17}, {70001}, {5, 3}})
    out.push_back(torch::randn(shape).to(dtype).requires_grad_(true));
  out.push_back(torch::randn({6, 4}).to(dtype).t().detach().requires_grad_(true));
  return out;
}

std::vector<torch::Tensor> clone_params(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));  // keeps the strides
  return out;
}

// Two groups: the first three parameters with `options`, the rest with other betas, lr and decay.
template <typename Opt>
std::unique_ptr<Opt> make_optimizer(const std::vector<torch::Tensor>& params, const AdamWOptions& options) {
  auto second = std::make_unique<AdamWOptions>(options);
  second->lr(0.02).betas({0.8, 0.99}).weight_decay(options.weight_decay() * 2);
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>(params.begin(), params.begin() + 3));
  groups.emplace_back(std::vector<torch::Tensor>(params.begin() + 3, params.end()), std::move(second));
  return std::make_unique<Opt>(groups, options);
}

// Steps [first, last): the same gradients (a function of step and parameter) and learning rates
// (each group its own schedule, changed before every step) whatever the optimizer.
// bf16_grads: the gradients rounded to bf16 whatever the parameters' dtype (an fp32 reference of a bf16 run).
void run_steps(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params, int first, int last,
               bool bf16_grads = false) {
  for (int step = first; step < last; ++step) {
    auto& groups = opt.param_groups();
    groups[0].options().set_lr(1e-2 * (1.0 + 0.5 * std::sin(step)));
    groups[1].options().set_lr(0.02 / (1.0 + step));
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = params[i];
      if (i == kNoGrad) continue;
      torch::manual_seed(1000 * step + int64_t(i));
      auto g = torch::randn(p.sizes()) * (1.0 + double(i));
      if (bf16_grads) g = g.to(torch::kBFloat16);
      p.mutable_grad() = g.to(p.scalar_type());
    }
    opt.step();
  }
}

}  // namespace

class TestFusedAdamW : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

  tb::training::RunResult run(const QString& output_dir, const std::vector<std::string>& overrides, CollectingLogger& logger,
                               int64_t stop_after = -1) {
    tbtest::TinyConfig config;
    config.optimizer_args += "  amsgrad: true\n";
    tb::training::RunControl control;
    logger.stop_after = stop_after;
    return tbtest::run_recipe("full_finetune_single_device", config.text(output_dir.toStdString()), overrides, logger,
                              control);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CACHE_HOME", tmp_.filePath("cache").toUtf8());
    qunsetenv("TUNEBENCH_COMPILE_FORCE_MISMATCH");
  }

  void stepMatchesTorchAdamW_data() {
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<double>("weight_decay");
    QTest::addColumn<bool>("amsgrad");
    for (const bool bf16 : {false, true})
      for (const double wd : {0.0, 0.1})
        for (const bool ams : {false, true}) {
          const std::string tag = std::string(bf16 ? "bf16" : "fp32") + " wd=" + std::to_string(wd).substr(0, 3) +
                                  (ams ? " amsgrad" : "");
          QTest::newRow(tag.c_str()) << bf16 << wd << ams;
        }
  }
  void stepMatchesTorchAdamW() {
    QFETCH(bool, bf16);
    QFETCH(double, weight_decay);
    QFETCH(bool, amsgrad);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
    // fp32: the same arithmetic up to operation order. bf16: torch rounds to bf16 after every op and
    // rounds beta1, 1 - lr * weight_decay, ... to bf16; the fused loop computes in fp32 and rounds
    // once per stored value. So in bf16 both are also compared with an fp32 run on the same bf16
    // starting values and gradients: the fused one must be at least as close to it as torch's.
    const double tolerance = bf16 ? 3e-2 : 1e-6;
    const auto options = AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-6).weight_decay(weight_decay).amsgrad(amsgrad);
    auto ref_params = make_params(dtype);
    auto fused_params = clone_params(ref_params);
    const auto start = clone_params(ref_params);
    auto ref = make_optimizer<AdamW>(ref_params, options);
    auto fused = make_optimizer<tb::compile::FusedAdamW>(fused_params, options);
    run_steps(*ref, ref_params, 0, 10);
    run_steps(*fused, fused_params, 0, 10);
    std::vector<torch::Tensor> wide_params;
    for (const auto& p : start) wide_params.push_back(p.detach().to(torch::kFloat).clone().requires_grad_(true));
    auto wide = make_optimizer<AdamW>(wide_params, options);
    if (bf16) run_steps(*wide, wide_params, 0, 10, /*bf16_grads=*/true);

    double worst = 0, fused_to_wide = 0, torch_to_wide = 0;
    for (size_t i = 0; i < ref_params.size(); ++i) {
      const auto* rs = state_of(*ref, ref_params[i]);
      const auto* fs = state_of(*fused, fused_params[i]);
      if (i == kNoGrad) {
        QVERIFY(!rs && !fs);
        QVERIFY(torch::equal(fused_params[i], start[i]));
        continue;
      }
      QVERIFY2(rs && fs, std::to_string(i).c_str());
      QCOMPARE(fs->step(), int64_t(10));
      QCOMPARE(fs->exp_avg().scalar_type(), rs->exp_avg().scalar_type());  // bf16 moments for bf16 params
      QCOMPARE(fs->max_exp_avg_sq().defined(), amsgrad);
      QVERIFY(!torch::equal(fused_params[i], start[i]));
      std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs = {
          {fused_params[i], ref_params[i]}, {fs->exp_avg(), rs->exp_avg()}, {fs->exp_avg_sq(), rs->exp_avg_sq()}};
      if (amsgrad) pairs.emplace_back(fs->max_exp_avg_sq(), rs->max_exp_avg_sq());
      for (const auto& [got, want] : pairs) {
        const double e = rel_err(got, want);
        worst = std::max(worst, e);
        QVERIFY2(e <= tolerance, (std::to_string(i) + ": " + std::to_string(e)).c_str());
      }
      if (bf16) {
        const auto* ws = state_of(*wide, wide_params[i]);
        fused_to_wide += rel_err(fused_params[i], wide_params[i]) + rel_err(fs->exp_avg(), ws->exp_avg()) +
                         rel_err(fs->exp_avg_sq(), ws->exp_avg_sq());
        torch_to_wide += rel_err(ref_params[i], wide_params[i]) + rel_err(rs->exp_avg(), ws->exp_avg()) +
                         rel_err(rs->exp_avg_sq(), ws->exp_avg_sq());
      }
    }
    qInfo("largest relative error to torch (params and moments): %.3g", worst);
    if (bf16) {
      qInfo("summed relative errors to the fp32 run: fused %.3g, torch %.3g", fused_to_wide, torch_to_wide);
      QVERIFY(fused_to_wide <= torch_to_wide);
    }
  }

  // set_grad_scale(s) then step() is a step on the gradients multiplied by s in fp32 and rounded to
  // their dtype (in fp32: grad.mul_(s)), bit for bit, and lasts one step.
  void gradScaleIsTheScaledGradient_data() {
    QTest::addColumn<bool>("bf16");
    QTest::newRow("fp32") << false;
    QTest::newRow("bf16") << true;
  }
  void gradScaleIsTheScaledGradient() {
    QFETCH(bool, bf16);
    const auto options = AdamWOptions(1e-2).weight_decay(0.1);
    auto scaled_params = make_params(bf16 ? torch::kBFloat16 : torch::kFloat);
    auto params = clone_params(scaled_params);
    auto by_mul = make_optimizer<tb::compile::FusedAdamW>(scaled_params, options);
    auto by_scale = make_optimizer<tb::compile::FusedAdamW>(params, options);
    const double scale = 1.0 / 777;  // no power of two: the product rounds
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < params.size(); ++i) {
        if (i == kNoGrad) continue;
        torch::manual_seed(1000 * step + int64_t(i));
        const auto g = (torch::randn(params[i].sizes()) * 3.0).to(params[i].scalar_type());
        scaled_params[i].mutable_grad() = (g.to(torch::kFloat) * float(step < 2 ? scale : 1.0)).to(g.scalar_type());
        params[i].mutable_grad() = g.clone();
      }
      by_mul->step();
      if (step < 2) by_scale->set_grad_scale(scale);  // the third step runs unscaled: the scale lasted one step
      by_scale->step();
      for (size_t i = 0; i < params.size(); ++i)
        QVERIFY2(torch::equal(params[i], scaled_params[i]), (std::to_string(step) + ": " + std::to_string(i)).c_str());
    }
    // A scale is for the fused step only.
    by_scale->set_fused(false);
    by_scale->set_grad_scale(0.5);
    QVERIFY_THROWS_EXCEPTION(c10::Error, by_scale->step());
  }

  // Switched off (a compiled run that fell back to eager), the step is torch's own, bit for bit.
  void unfusedIsTorchBitForBit() {
    const auto options = AdamWOptions(1e-2).weight_decay(0.1).amsgrad(true);
    auto ref_params = make_params(torch::kFloat);
    auto params = clone_params(ref_params);
    auto ref = make_optimizer<AdamW>(ref_params, options);
    auto fused = make_optimizer<tb::compile::FusedAdamW>(params, options);
    fused->set_fused(false);
    run_steps(*ref, ref_params, 0, 4);
    run_steps(*fused, params, 0, 4);
    for (size_t i = 0; i < params.size(); ++i) QVERIFY(torch::equal(params[i], ref_params[i]));
  }

  // The recipe's checkpoint of the optimizer (recipe_state.pt) written by one, read by the other,
  // continues as ten steps of torch's AdamW; without the state the same continuation differs.
  void stateRoundTripsThroughTheRecipeCheckpoint_data() {
    QTest::addColumn<bool>("fused_first");
    QTest::newRow("fused, then torch") << true;
    QTest::newRow("torch, then fused") << false;
  }
  void stateRoundTripsThroughTheRecipeCheckpoint() {
    QFETCH(bool, fused_first);
    const auto options = AdamWOptions(1e-2).weight_decay(0.05).amsgrad(true);
    auto ref_params = make_params(torch::kFloat);
    auto ref = make_optimizer<AdamW>(ref_params, options);
    run_steps(*ref, ref_params, 0, 10);

    auto first_params = make_params(torch::kFloat);
    std::unique_ptr<torch::optim::Optimizer> first;
    if (fused_first) first = make_optimizer<tb::compile::FusedAdamW>(first_params, options);
    else first = make_optimizer<AdamW>(first_params, options);
    run_steps(*first, first_params, 0, 5);
    const std::string dir = tmp_.filePath(fused_first ? "state_fused" : "state_torch").toStdString();
    fs::create_directories(dir);
    tb::training::RecipeState counters;
    counters.global_step = 5;
    tb::training::save_recipe_state(dir, counters, *first);

    bool loaded_ok = true;
    auto continue_from = [&](bool load) -> double {
      auto params = clone_params(first_params);  // new tensors: the state is matched by position
      std::unique_ptr<torch::optim::Optimizer> second;
      if (fused_first) second = make_optimizer<AdamW>(params, options);
      else second = make_optimizer<tb::compile::FusedAdamW>(params, options);
      if (load) {
        loaded_ok = tb::training::load_recipe_state(dir, *second).global_step == 5 &&
                    second->state().size() == first->state().size();
        for (size_t i = 0; i < params.size(); ++i)
          if (i != kNoGrad) loaded_ok = loaded_ok && state_of(*second, params[i])->step() == 5;
      }
      run_steps(*second, params, 5, 10);
      double worst = 0;
      for (size_t i = 0; i < params.size(); ++i) worst = std::max(worst, rel_err(params[i], ref_params[i]));
      return worst;
    };
    const double resumed = continue_from(true);
    const double fresh = continue_from(false);
    qInfo("resumed: %.3g, with a fresh state instead: %.3g", resumed, fresh);
    QVERIFY2(loaded_ok, "the loaded state is not the saved one (count, keys or step)");
    QVERIFY2(resumed <= 1e-6, std::to_string(resumed).c_str());
    QVERIFY2(fresh > 1e-4, std::to_string(fresh).c_str());  // the comparison sees a lost state
  }

  // The recipe's hook: a torch AdamW that has stepped becomes a FusedAdamW with its state and goes on
  // as torch's would; another optimizer is handed back as it is.
  void fuseOptimizerKeepsTheState() {
    const auto options = AdamWOptions(1e-2).weight_decay(0.1);
    auto ref_params = make_params(torch::kFloat);
    auto params = clone_params(ref_params);
    auto ref = make_optimizer<AdamW>(ref_params, options);
    std::unique_ptr<torch::optim::Optimizer> opt = make_optimizer<AdamW>(params, options);
    run_steps(*ref, ref_params, 0, 3);
    run_steps(*opt, params, 0, 3);
    opt = tb::compile::fuse_optimizer(std::move(opt));
    QVERIFY(dynamic_cast<tb::compile::FusedAdamW*>(opt.get()));
    QCOMPARE(opt->param_groups().size(), size_t(2));
    QCOMPARE(opt->param_groups()[1].options().get_lr(), ref->param_groups()[1].options().get_lr());
    QCOMPARE(state_of(*opt, params[0])->step(), int64_t(3));
    run_steps(*ref, ref_params, 3, 6);
    run_steps(*opt, params, 3, 6);
    for (size_t i = 0; i < params.size(); ++i) QVERIFY(rel_err(params[i], ref_params[i]) <= 1e-6);

    auto sgd_params = make_params(torch::kFloat);
    std::unique_ptr<torch::optim::Optimizer> sgd = std::make_unique<torch::optim::SGD>(sgd_params, 0.1);
    auto* before = sgd.get();
    QCOMPARE(tb::compile::fuse_optimizer(std::move(sgd)).get(), before);
  }

  // A compiled full fine-tune stopped after step 3 resumes in an eager run (and an eager one in a
  // compiled run); steps 4-6 (5 and 6 use the loaded moments) follow the uninterrupted eager run.
  void compiledCheckpointResumesEagerAndBack_data() {
    QTest::addColumn<bool>("compiled_first");
    QTest::newRow("compiled, then eager") << true;
    QTest::newRow("eager, then compiled") << false;
  }
  void compiledCheckpointResumesEagerAndBack() {
    QFETCH(bool, compiled_first);
    const std::string first_mode = compiled_first ? "compile=true" : "compile=false";
    const std::string second_mode = compiled_first ? "compile=false" : "compile=true";
    CollectingLogger whole, first, second;
    const QString whole_dir = tmp_.filePath(compiled_first ? "whole_1" : "whole_2");
    QCOMPARE(run(whole_dir, {"compile=false"}, whole).status, tb::training::RunStatus::Completed);
    QCOMPARE(whole.steps.size(), size_t(6));
    const QString out = tmp_.filePath(compiled_first ? "split_c_e" : "split_e_c");
    QCOMPARE(run(out, {first_mode}, first, 3).status, tb::training::RunStatus::Stopped);
    QCOMPARE(first.info_containing("AdamW steps fused").empty(), !compiled_first);
    const auto resumed = run(out, {second_mode, "resume_from_checkpoint=true"}, second);
    QVERIFY2(resumed.status == tb::training::RunStatus::Completed, resumed.message.c_str());
    QCOMPARE(second.info_containing("AdamW steps fused").empty(), compiled_first);
    QCOMPARE(second.steps.size(), size_t(3));
    double worst = 0;
    for (size_t i = 0; i < 3; ++i) {
      QCOMPARE(second.steps[i].step, int64_t(4 + i));
      const double a = whole.steps[3 + i].loss, b = second.steps[i].loss;
      worst = std::max(worst, std::abs(a - b) / std::abs(a));
    }
    qInfo("largest relative loss difference to the uninterrupted eager run: %.3g", worst);
    QVERIFY2(worst <= 1e-4, std::to_string(worst).c_str());
  }
};

TB_TEST(TestFusedAdamW)
#include "test_fused_adamw.moc"
