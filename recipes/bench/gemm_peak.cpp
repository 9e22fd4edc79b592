#include "bench/gemm_peak.h"

#include <chrono>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "bench/step_bench.h"
#include "compile/gemm.h"
#include "training/memory_budget.h"

namespace tb::bench {

nlohmann::json measure_gemm_peak(int64_t m, int64_t k, int64_t n, bool bf16, int repeats) {
  const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);  // the run's random stream is not touched
  const auto opts = torch::TensorOptions().dtype(dtype);
  const auto a = torch::randn({m, k}, gen, torch::kFloat).to(dtype);
  const auto b = torch::randn({k, n}, gen, torch::kFloat).to(dtype);
  auto c = torch::empty({m, n}, opts);
  nlohmann::json best = {{"gflops", 0.0}, {"backend", ""}, {"m", m}, {"k", k}, {"n", n}};
  for (auto backend : {compile::GemmBackend::aten, compile::GemmBackend::onednn}) {
    if (backend == compile::GemmBackend::onednn && !compile::onednn_available()) continue;
    compile::gemm_into(c, a, b, false, backend);  // first call: JIT, caches
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      compile::gemm_into(c, a, b, false, backend);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const double gflops = 2.0 * double(m) * double(k) * double(n) / median(seconds) / 1e9;
    if (gflops > best["gflops"].get<double>()) {
      best["gflops"] = gflops;
      best["backend"] = compile::gemm_backend_name(backend);
    }
  }
  return best;
}

void add_machine_limit(nlohmann::json& line, const nlohmann::json& eager, const nlohmann::json& compiled,
                       int64_t sequences, int64_t micro_batches, bool bf16) {
  const nlohmann::json& shape = compiled["shape"];
  if (!shape.is_object() || sequences < 1) return;
  // Tokens are the step's label tokens: with every position labelled, seq_len - 1 a sequence.
  const int64_t tokens = eager["tokens_per_step"].get<int64_t>();
  const int64_t seq_len = (tokens + sequences - 1) / sequences;
  const double flops = training::step_flops(shape, sequences, seq_len);
  const int64_t m = std::max<int64_t>(1, tokens / std::max<int64_t>(1, micro_batches));
  const int64_t k = shape.value("dim", int64_t{0}), n = shape.value("hidden", int64_t{0});
  if (k < 1 || n < 1) return;
  const auto peak_fp32 = measure_gemm_peak(m, k, n, false);
  const auto peak_bf16 = measure_gemm_peak(m, k, n, true);
  const double peak = (bf16 ? peak_bf16 : peak_fp32)["gflops"].get<double>() * 1e9;
  auto achieved = [&](const nlohmann::json& f) { return flops / f["median_step_s"].get<double>(); };
  line["flops_per_step"] = flops;
  line["peak_gemm"] = {{"fp32", peak_fp32}, {"bf16", peak_bf16}};
  line["eager_gflops"] = achieved(eager) / 1e9;
  line["compile_gflops"] = achieved(compiled) / 1e9;
  line["eager_mfu"] = peak > 0 ? achieved(eager) / peak : 0.0;
  line["compile_mfu"] = peak > 0 ? achieved(compiled) / peak : 0.0;
}

}  // namespace tb::bench
