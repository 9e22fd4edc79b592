#include "bench/compile_bench.h"

#include <unistd.h>

#include <filesystem>

#include "bench/gemm_peak.h"
#include "config/schema.h"

namespace tb::bench {

namespace fs = std::filesystem;

std::string bench_scratch_dir() {
  std::error_code ec;
  return (fs::temp_directory_path(ec) / ("tunebench-bench-" + std::to_string(::getpid()))).string();
}

std::optional<CompileBench> bench_compile(const RecipeInfo& recipe, const BenchConfigLoader& load,
                                          const std::vector<std::string>& overrides, const StepBenchOptions& options,
                                          const std::function<void(bool, const nlohmann::json&)>& on_mode) {
  const fs::path scratch = bench_scratch_dir();
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};
  CompileBench out;
  int64_t sequences = 0, micro_batches = 1;  // per optimizer step, for the FLOPs
  bool bf16 = false;
  for (const bool compiled : {false, true}) {
    auto all = overrides;
    const auto bench = bench_overrides(options, (scratch / (compiled ? "compiled" : "eager")).string());
    all.insert(all.end(), bench.begin(), bench.end());  // last, so they win
    all.push_back(compiled ? "compile=true" : "compile=false");
    const auto cfg = load(all);
    if (!cfg) return std::nullopt;
    micro_batches = config::setting_int(*cfg, "gradient_accumulation_steps");
    sequences = config::setting_int(*cfg, "batch_size") * micro_batches;
    bf16 = config::setting_string(*cfg, "dtype").rfind("bf", 0) == 0;
    (compiled ? out.compiled : out.eager) = bench_steps(recipe, *cfg, options);
    if (on_mode) on_mode(compiled, compiled ? out.compiled : out.eager);
  }
  out.line = compare_eager_and_compiled(out.eager, out.compiled);
  try {
    add_machine_limit(out.line, out.eager, out.compiled, sequences, micro_batches, bf16);
  } catch (const std::exception& e) {
    out.limit_error = e.what();
  }
  return out;
}

}  // namespace tb::bench
