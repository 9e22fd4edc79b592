// What the dataset tests compare: two datasets sample for sample (tokens and labels), and the losses a
// run's metrics.jsonl logged, step by step. Core tests only (it reaches the engine's dataset header).
#pragma once

#include <QtTest>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace tbtest {

inline void compare_samples(const tb::data::Dataset& a, const tb::data::Dataset& b) {
  QCOMPARE(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    QCOMPARE(a.get(i).tokens, b.get(i).tokens);
    QCOMPARE(a.get(i).labels, b.get(i).labels);
  }
}

// The "loss" of each step event of a metrics.jsonl text, in order.
inline std::vector<double> step_losses(const std::string& metrics_jsonl) {
  std::vector<double> out;
  std::istringstream lines(metrics_jsonl);
  for (std::string line; std::getline(lines, line);)
    if (const auto e = nlohmann::json::parse(line); e.contains("loss") && e.contains("step")) out.push_back(e["loss"].get<double>());
  return out;
}

}  // namespace tbtest
