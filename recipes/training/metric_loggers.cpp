#include "training/metric_loggers.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "config/config.h"
#include "config/registry.h"
#include "config/schema.h"
#include "text/json_text.h"

namespace tb::training {

// ---- DiskLogger ------------------------------------------------------------------------------------------

DiskLogger::DiskLogger(const std::string& log_dir, const std::string& filename) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) throw std::runtime_error("cannot create the log folder " + log_dir + ": " + ec.message());
  path_ = (std::filesystem::path(log_dir) / filename).string();
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("cannot open " + path_ + " for writing");
}

void DiskLogger::write_line(const nlohmann::json& j) {
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << text::json_text(j) << '\n';
  out_.flush();
}

void DiskLogger::log_step(const StepMetrics& m) { write_line(to_json(m)); }
void DiskLogger::log_event(const nlohmann::json& event) { write_line(event); }

void DiskLogger::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  out_.flush();
}

// ---- ETA and the progress line ---------------------------------------------------------------------------

void EtaEstimator::observe(const StepMetrics& m) {
  // A resume (flagged, or the step count going back) starts the statistics over.
  if (m.resumed_before || (last_step_ > 0 && m.step <= last_step_)) {
    steady_steps_ = 0;
    steady_time_s_ = 0;
  }
  last_step_ = m.step;
  total_steps_ = m.total_steps;
  if (m.phase == Phase::Steady && std::isfinite(m.step_time_s) && m.step_time_s >= 0) {
    ++steady_steps_;
    steady_time_s_ += m.step_time_s;
  }
}

std::optional<double> EtaEstimator::eta_seconds() const {
  if (steady_steps_ == 0 || total_steps_ <= 0) return std::nullopt;
  int64_t remaining = std::max<int64_t>(0, total_steps_ - last_step_);
  return mean_steady_step_s() * static_cast<double>(remaining);
}

std::string format_duration(double seconds) {
  long total = std::lround(std::max(0.0, seconds));
  long h = total / 3600, m = (total / 60) % 60, s = total % 60;
  char buf[48];
  if (h > 0)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", h, m, s);
  else if (m > 0)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", m, s);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string format_progress_line(const StepMetrics& m, const EtaEstimator& eta) {
  char buf[256];
  std::string step = m.total_steps > 0 ? std::to_string(m.step) + "/" + std::to_string(m.total_steps) : std::to_string(m.step);
  std::snprintf(buf, sizeof buf, "step %s | epoch %lld | loss %.4f | lr %.1e | %.0f tok/s | %.2f s/step", step.c_str(),
                static_cast<long long>(m.epoch), m.loss, m.lr, m.tokens_per_second, m.step_time_s);
  std::string line = buf;
  auto left = eta.eta_seconds();
  line += " | ETA " + (left ? format_duration(*left) : std::string("--"));
  if (m.phase == Phase::Warmup) line += " (warm-up)";
  return line;
}

// ---- StdoutLogger ----------------------------------------------------------------------------------------

LogLevel parse_log_level(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "DEBUG") return LogLevel::Debug;
  if (upper == "INFO") return LogLevel::Info;
  if (upper == "WARNING" || upper == "WARN") return LogLevel::Warning;
  if (upper == "ERROR") return LogLevel::Error;
  if (upper == "CRITICAL" || upper == "FATAL") return LogLevel::Critical;
  throw std::runtime_error("log_level: unknown level '" + name + "' (DEBUG, INFO, WARNING, ERROR or CRITICAL)");
}

namespace {

// Warnings are warnings; how the run ended is the summary WARNING keeps, an error when it failed.
LogLevel level_of(const nlohmann::json& event) {
  const std::string kind = event.value("event", std::string());
  if (kind == "warning") return LogLevel::Warning;
  if (kind == "end") return event.value("status", std::string()) == "failed" ? LogLevel::Error : LogLevel::Warning;
  return LogLevel::Info;
}

}  // namespace

StdoutLogger::StdoutLogger(std::ostream& out, bool overwrite_line) : out_(out), overwrite_line_(overwrite_line) {}
StdoutLogger::StdoutLogger() : StdoutLogger(std::cout, isatty(STDOUT_FILENO) == 1) {}

void StdoutLogger::log_step(const StepMetrics& m) {
  eta_.observe(m);
  if (level_ > LogLevel::Info) return;
  std::string line = format_progress_line(m, eta_);
  if (overwrite_line_) {
    out_ << "\r\033[K" << line << std::flush;  // carriage return + clear to end of line
    line_open_ = true;
  } else {
    out_ << line << '\n' << std::flush;
  }
}

void StdoutLogger::log_event(const nlohmann::json& event) {
  if (level_of(event) < level_) return;
  if (line_open_) {
    out_ << '\n';
    line_open_ = false;
  }
  std::string kind = event.value("event", std::string());
  if (kind == "compile" && event.contains("seconds") && event["seconds"].is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", event["seconds"].get<double>());
    out_ << "compile: warm-up took " << buf << " s";
    if (event.value("cache_hit", false)) out_ << " (plan from the cache)";
    if (event.value("fallback", false)) out_ << " (fell back to eager)";
    out_ << '\n';
  } else if (kind == "start") {
    out_ << "run started: " << event.value("recipe", std::string()) << ", "
         << (event.value("compile", false) ? "compiled" : "eager") << ", " << event.value("dtype", std::string())
         << (event.value("resume", false) ? ", resuming" : "") << '\n';
  } else if (kind == "checkpoint" && event.contains("path")) {
    out_ << "checkpoint saved: " << event["path"].get<std::string>() << '\n';
  } else if ((kind == "info" || kind == "warning") && event.contains("message") && event["message"].is_string()) {
    out_ << (kind == "warning" ? "warning: " : "") << event["message"].get<std::string>() << '\n';
  } else if (kind == "end") {
    out_ << "run " << event.value("status", std::string("ended"));
    if (event.contains("message") && event["message"].is_string() && !event["message"].get<std::string>().empty())
      out_ << ": " << event["message"].get<std::string>();
    out_ << '\n';
  } else {
    out_ << text::json_text(event) << '\n';
  }
  out_ << std::flush;
}

void StdoutLogger::flush() { out_ << std::flush; }

// ---- CallbackLogger and FanOutLogger ---------------------------------------------------------------------

CallbackLogger::CallbackLogger(std::function<void(const StepMetrics&)> on_step,
                               std::function<void(const nlohmann::json&)> on_event)
    : on_step_(std::move(on_step)), on_event_(std::move(on_event)) {}

void CallbackLogger::log_step(const StepMetrics& m) {
  if (on_step_) on_step_(m);
}
void CallbackLogger::log_event(const nlohmann::json& event) {
  if (on_event_) on_event_(event);
}

void FanOutLogger::add(std::shared_ptr<MetricLogger> logger) {
  if (!logger) return;
  if (auto* console = dynamic_cast<StdoutLogger*>(logger.get())) console->set_level(level_);
  loggers_.push_back(std::move(logger));
}
void FanOutLogger::set_log_level(LogLevel level) {
  level_ = level;
  for (auto& l : loggers_)
    if (auto* console = dynamic_cast<StdoutLogger*>(l.get())) console->set_level(level);
}
void FanOutLogger::log_step(const StepMetrics& m) {
  for (auto& l : loggers_) l->log_step(m);
}
void FanOutLogger::log_event(const nlohmann::json& event) {
  for (auto& l : loggers_) l->log_event(event);
}
void FanOutLogger::flush() {
  for (auto& l : loggers_) l->flush();
}

// ---- from a config ---------------------------------------------------------------------------------------

std::string metrics_log_dir(const config::Config& cfg) {
  const YAML::Node set = cfg.at("metric_logger.log_dir");
  if (set.IsDefined() && set.IsScalar()) return set.Scalar();
  return (std::filesystem::path(cfg.get_string("output_dir", ".")) / "logs").string();
}

std::unique_ptr<FanOutLogger> make_metric_logger(const config::Config& cfg, const config::Registry& registry) {
  auto fan = std::make_unique<FanOutLogger>();
  fan->set_log_level(parse_log_level(config::setting_string(cfg, "log_level")));
  const std::string log_dir = metrics_log_dir(cfg);
  YAML::Node node = cfg.at("metric_logger");
  if (node.IsDefined() && node.IsMap()) {
    YAML::Node own = YAML::Clone(node);
    own["log_dir"] = log_dir;
    fan->add(registry.build<std::unique_ptr<MetricLogger>>(own));
  }
  if (!fan->contains<DiskLogger>()) fan->add(std::make_shared<DiskLogger>(log_dir));
  return fan;
}

}  // namespace tb::training
