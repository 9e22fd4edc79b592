// What the recipe tests share: a real MetricLogger sink that keeps every step and event, and can
// ask the run to stop after a given step (as the Stop button and Ctrl-C do).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipe.h"
#include "training/metrics.h"

namespace tbtest {

struct CollectingLogger : tb::training::MetricLogger {
  std::vector<tb::training::StepMetrics> steps;
  std::vector<nlohmann::json> events;
  tb::RunControl* control = nullptr;
  int64_t stop_after = -1;

  void log_step(const tb::training::StepMetrics& m) override {
    steps.push_back(m);
    if (control && m.step == stop_after) control->stop = true;
  }
  void log_event(const nlohmann::json& e) override { events.push_back(e); }

  std::vector<double> losses() const {
    std::vector<double> out;
    for (const auto& s : steps) out.push_back(s.loss);
    return out;
  }
  // The first info message containing `text`, or "".
  std::string info_containing(const std::string& text) const {
    for (const auto& e : events)
      if (e.value("event", "") == "info" && e.value("message", "").find(text) != std::string::npos) return e["message"];
    return {};
  }
};

}  // namespace tbtest
