#include "bench/step_bench.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include "training/memory.h"
#include "training/metrics.h"

namespace tb::bench {
namespace {

// Keeps every step and the memory budget; asks the run to stop, without saving, after its last step.
class BenchLogger : public training::MetricLogger {
 public:
  BenchLogger(training::RunControl& control, int64_t last_step, std::function<void(int64_t, int64_t)> progress,
              const std::atomic<bool>* interrupt, std::string profile_path)
      : control_(control),
        last_step_(last_step),
        progress_(std::move(progress)),
        interrupt_(interrupt),
        profile_path_(std::move(profile_path)) {}

  // Called on the training thread after each step, so the profiler (per thread) sees the next one.
  void log_step(const training::StepMetrics& m) override {
    steps.push_back(m);
    const auto done = static_cast<int64_t>(steps.size());
    if (progress_) progress_(done, last_step_);
    if (!profile_path_.empty() && done == last_step_ - 1)
      profiler_ = std::make_unique<torch::autograd::profiler::RecordProfile>(profile_path_);
    if (done >= last_step_ || (interrupt_ && interrupt_->load())) {
      profiler_.reset();  // writes the trace
      control_.stop = true;
    }
  }
  void log_event(const nlohmann::json& e) override {
    if (e.contains("memory")) memory = e["memory"];
    if (e.contains("shape")) shape = e["shape"];
    if (e.value("event", "") == "compile") compile = e;
  }

  std::vector<training::StepMetrics> steps;
  nlohmann::json memory;
  nlohmann::json shape;    // what the step's FLOPs are counted from (training/memory_budget.h)
  nlohmann::json compile;  // the warm-up event of a compiled run

 private:
  training::RunControl& control_;
  int64_t last_step_;
  std::function<void(int64_t, int64_t)> progress_;
  const std::atomic<bool>* interrupt_;
  std::string profile_path_;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profiler_;
};

double gib(const nlohmann::json& memory, const char* key) {
  return memory.value(key, int64_t{0}) / training::kGiB;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<std::string> bench_overrides(const StepBenchOptions& options, const std::string& output_dir) {
  return {"output_dir=" + output_dir,
          "epochs=1",
          "max_steps_per_epoch=" + std::to_string(options.warmup + options.steps + (options.profile_path.empty() ? 0 : 1)),
          "log_every_n_steps=1",
          "log_peak_memory_stats=true",
          "save_every_n_steps=0",
          "resume_from_checkpoint=false"};
}

nlohmann::json compare_eager_and_compiled(const nlohmann::json& eager, const nlohmann::json& compiled) {
  double max_rel = 0;
  const auto& a = eager["losses"];
  const auto& b = compiled["losses"];
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    max_rel = std::max(max_rel, std::abs(b[i].get<double>() - a[i].get<double>()) / std::max(std::abs(a[i].get<double>()), 1e-12));
  const nlohmann::json& warmup = compiled["compile"];
  const double steady = compiled["median_step_s"].get<double>();
  const double first = compiled["first_step_s"].get<double>();
  return {{"recipe", eager["recipe"]},
          {"steps", eager["steps"]},
          {"threads", eager["threads"]},
          {"tokens_per_step", eager["tokens_per_step"]},
          {"eager_tokens_per_s", eager["tokens_per_s"]},
          {"compile_tokens_per_s", compiled["tokens_per_s"]},
          {"speedup", compiled["tokens_per_s"].get<double>() / eager["tokens_per_s"].get<double>()},
          {"eager_first_step_s", eager["first_step_s"]},
          {"compile_first_step_s", first},
          {"compile_warmup_s", warmup.is_object() ? warmup.value("seconds", 0.0) : 0.0},
          {"warmup_cost_steps", steady > 0 ? (first - steady) / steady : 0.0},
          {"compile_cache_hit", warmup.is_object() && warmup.value("cache_hit", false)},
          {"compile_fallback", !warmup.is_object() || warmup.value("fallback", true)},
          {"compile_plan", warmup.is_object() && warmup.contains("plan") ? warmup["plan"] : nlohmann::json()},
          {"compile_eager_pieces",
           warmup.is_object() && warmup.contains("eager_pieces") ? warmup["eager_pieces"] : nlohmann::json::array()},
          {"loss_max_rel_diff", max_rel},
          {"compared_steps", std::min(a.size(), b.size())},
          {"eager_peak_memory_gib", eager["peak_memory_gib"]},
          {"compile_peak_memory_gib", compiled["peak_memory_gib"]}};
}

nlohmann::json bench_steps(const RecipeInfo& recipe, const config::Config& cfg, const StepBenchOptions& options) {
  if (options.steps < 1) throw std::runtime_error("bench: --steps must be at least 1");
  if (options.warmup < 0) throw std::runtime_error("bench: --warmup must not be negative");
  const int64_t measured_end = options.warmup + options.steps;
  const int64_t total = measured_end + (options.profile_path.empty() ? 0 : 1);
  training::RunControl control;
  control.save_on_stop = false;
  BenchLogger logger(control, total, options.progress, options.interrupt, options.profile_path);
  const training::RunResult result = recipe.run(cfg, logger, control);
  if (result.status == training::RunStatus::Failed) throw std::runtime_error("bench: the run failed: " + result.message);
  if (options.interrupt && options.interrupt->load())
    throw std::runtime_error("bench: interrupted after " + std::to_string(logger.steps.size()) + " of " +
                             std::to_string(total) + " steps");
  if (static_cast<int64_t>(logger.steps.size()) < total)
    throw std::runtime_error("bench: the run ended after " + std::to_string(logger.steps.size()) + " of " +
                             std::to_string(total) + " steps (is the dataset large enough for " +
                             std::to_string(total) + " steps of batch_size x gradient_accumulation_steps?)");

  std::vector<double> step_s, tokens_per_s;
  double peak_gib = 0;
  for (size_t i = static_cast<size_t>(options.warmup); i < static_cast<size_t>(measured_end); ++i) {
    step_s.push_back(logger.steps[i].step_time_s);
    tokens_per_s.push_back(logger.steps[i].tokens_per_second);
    peak_gib = std::max(peak_gib, logger.steps[i].peak_memory_gib);
  }
  const nlohmann::json& m = logger.memory;
  const double floor = gib(m, "frozen_bytes") + gib(m, "trainable_bytes") + gib(m, "gradient_bytes") +
                       gib(m, "optimizer_bytes");
  const int64_t frozen_params = m.value("frozen_params", int64_t{0});
  const int64_t nf4_params = m.value("nf4_params", int64_t{0});
  nlohmann::json out = {
      {"recipe", recipe.name},
      {"steps", options.steps},
      {"warmup_steps", options.warmup},
      {"threads", at::get_num_threads()},
      {"tokens_per_step", logger.steps.back().tokens},
      {"first_step_s", logger.steps.front().step_time_s},
      {"median_step_s", median(step_s)},
      {"tokens_per_s", median(tokens_per_s)},
      {"peak_memory_gib", peak_gib},
      {"process_peak_rss_gib", training::process_peak_rss_bytes() / training::kGiB},
      {"frozen_weights_gib", gib(m, "frozen_bytes")},
      {"trainable_weights_gib", gib(m, "trainable_bytes")},
      {"gradients_gib", gib(m, "gradient_bytes")},
      {"optimizer_states_gib", gib(m, "optimizer_bytes")},
      {"floor_gib", floor},
      {"peak_over_floor", floor > 0 ? peak_gib / floor : 0.0},
      {"frozen_params", frozen_params},
      {"trainable_params", m.value("trainable_params", int64_t{0})},
      {"nf4_params", nf4_params},
      {"nf4_bytes_per_param", nf4_params > 0 ? double(m.value("nf4_bytes", int64_t{0})) / double(nf4_params) : 0.0},
      {"frozen_bytes_per_param",
       frozen_params > 0 ? double(m.value("frozen_bytes", int64_t{0})) / double(frozen_params) : 0.0},
      {"loss_first", logger.steps.front().loss},
      {"loss_last", logger.steps.back().loss}};
  nlohmann::json losses = nlohmann::json::array();
  for (const auto& s : logger.steps) losses.push_back(s.loss);
  out["losses"] = losses;
  out["compile"] = logger.compile;  // null when not compiled
  out["shape"] = logger.shape;
  if (!options.profile_path.empty()) out["profile"] = options.profile_path;
  return out;
}

}  // namespace tb::bench
