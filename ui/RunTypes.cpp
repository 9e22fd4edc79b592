#include "RunTypes.h"

#include "text/json_text.h"

namespace tb::ui {

QString stateName(RunState state) {
  switch (state) {
    case RunState::Idle: return "idle";
    case RunState::Running: return "running";
    case RunState::Paused: return "paused";
    case RunState::Stopping: return "stopping";
    case RunState::Completed: return "completed";
    case RunState::Stopped: return "stopped";
    case RunState::Failed: return "failed";
  }
  return {};
}

QString MemoryBudget::describe() const {
  auto mib = [](int64_t bytes) { return QString::number(double(bytes) / (1024.0 * 1024.0), 'f', 1) + " MiB"; };
  return QString("frozen weights %1%2, trainable weights %3, gradients %4, optimizer states %5")
      .arg(mib(frozenBytes), nf4Params > 0 ? QString(" (%1 params in NF4)").arg(nf4Params) : QString(),
           mib(trainableBytes), mib(gradientBytes), mib(optimizerBytes));
}

RunEvent runEventFromJson(const nlohmann::json& j) {
  RunEvent e;
  auto text = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString();
  };
  e.kind = text("event");
  if (j.contains("seconds") && j["seconds"].is_number()) e.seconds = j["seconds"].get<double>();
  e.path = text("path");
  e.status = text("status");
  e.message = text("message");
  e.fallback = j.contains("fallback") && j["fallback"].is_boolean() && j["fallback"].get<bool>();
  e.setup = text("setup");
  e.compile = j.contains("compile") && j["compile"].is_boolean() && j["compile"].get<bool>();
  if (j.contains("memory") && j["memory"].is_object()) {
    const auto& m = j["memory"];
    auto bytes = [&](const char* key) { return m.contains(key) && m[key].is_number() ? m[key].get<int64_t>() : int64_t{0}; };
    e.memory = MemoryBudget{bytes("frozen_bytes"), bytes("trainable_bytes"), bytes("gradient_bytes"),
                            bytes("optimizer_bytes"), bytes("nf4_params")};
  }
  e.json = QString::fromStdString(tb::text::json_text(j));
  return e;
}

void registerRunTypes() {
  static const bool once = [] {
    qRegisterMetaType<tb::training::StepMetrics>();
    qRegisterMetaType<RunEvent>();
    qRegisterMetaType<RunOutcome>();
    qRegisterMetaType<RunState>();
    return true;
  }();
  (void)once;
}

}  // namespace tb::ui
