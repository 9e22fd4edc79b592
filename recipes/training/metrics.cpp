#include "training/metrics.h"

#include <cmath>
#include <limits>

namespace tb::training {
namespace {

// JSON has no NaN or infinity (a diverged loss): they are written as null and read back as NaN.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double read_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

int64_t read_int(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? 0 : it->get<int64_t>();
}

}  // namespace

nlohmann::json to_json(const StepMetrics& m) {
  nlohmann::json j;
  j["step"] = m.step;
  j["total_steps"] = m.total_steps;
  j["epoch"] = m.epoch;
  j["loss"] = number(m.loss);
  j["lr"] = number(m.lr);
  j["tokens_per_second"] = number(m.tokens_per_second);
  j["step_time_s"] = number(m.step_time_s);
  j["peak_memory_gib"] = number(m.peak_memory_gib);
  j["tokens"] = m.tokens;
  j["phase"] = m.phase == Phase::Warmup ? "warmup" : "steady";
  if (m.resumed_before) j["resumed"] = true;
  return j;
}

StepMetrics step_metrics_from_json(const nlohmann::json& j) {
  StepMetrics m;
  m.step = read_int(j, "step");
  m.total_steps = read_int(j, "total_steps");
  m.epoch = read_int(j, "epoch");
  m.loss = read_number(j, "loss");
  m.lr = read_number(j, "lr");
  m.tokens_per_second = read_number(j, "tokens_per_second");
  m.step_time_s = read_number(j, "step_time_s");
  m.peak_memory_gib = read_number(j, "peak_memory_gib");
  m.tokens = read_int(j, "tokens");
  m.phase = j.value("phase", std::string("steady")) == "warmup" ? Phase::Warmup : Phase::Steady;
  m.resumed_before = j.value("resumed", false);
  return m;
}

}  // namespace tb::training
