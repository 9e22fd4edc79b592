#include "training/run_log.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace tb::training {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

template <typename Field>
double median_of_steady(const std::vector<StepMetrics>& steps, Field field) {
  std::vector<double> v;
  for (const auto& s : steps)
    if (s.phase == Phase::Steady) v.push_back(field(s));
  return median(std::move(v));
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::optional<LogLine> parse_log_line(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  LogLine out;
  if (j.contains("event")) {
    out.event = j;
    return out;
  }
  if (!j.contains("step")) return out;  // neither: a line of another kind, skipped
  try {
    out.step = step_metrics_from_json(j);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("a step with a field of the wrong type: ") + e.what());
  }
  return out;
}

RunStatus run_status_from_text(const std::string& status) {
  return status == "completed" ? RunStatus::Completed : status == "stopped" ? RunStatus::Stopped : RunStatus::Failed;
}

int warmup_steps(const std::vector<StepMetrics>& steps) {
  return int(std::count_if(steps.begin(), steps.end(), [](const auto& s) { return s.phase == Phase::Warmup; }));
}
std::vector<double> steady_tokens_per_second(const std::vector<StepMetrics>& steps) {
  std::vector<double> v;
  for (const auto& s : steps)
    if (s.phase == Phase::Steady) v.push_back(s.tokens_per_second);
  return v;
}

double median_steady_tokens_per_second(const std::vector<StepMetrics>& steps) {
  return median(steady_tokens_per_second(steps));
}
double relative_spread(std::vector<double> values) {
  if (values.size() < 4) return 0;
  std::sort(values.begin(), values.end());
  // Quartiles by linear interpolation between order statistics (numpy's default).
  auto quantile = [&](double q) {
    const double at = q * double(values.size() - 1);
    const size_t lo = static_cast<size_t>(at);
    const double frac = at - double(lo);
    return lo + 1 < values.size() ? values[lo] + frac * (values[lo + 1] - values[lo]) : values[lo];
  };
  const double mid = quantile(0.5);
  return mid > 0 ? (quantile(0.75) - quantile(0.25)) / mid : 0;
}

double median_steady_step_seconds(const std::vector<StepMetrics>& steps) {
  return median_of_steady(steps, [](const StepMetrics& s) { return s.step_time_s; });
}
double peak_memory_gib(const std::vector<StepMetrics>& steps) {
  double peak = 0;
  for (const auto& s : steps) peak = std::max(peak, s.peak_memory_gib);
  return peak;
}

void RunLogBuilder::add_line(const std::string& line, int line_no) {
  const std::string text = trimmed(line);
  if (text.empty()) return;
  try {
    const auto parsed = parse_log_line(text);
    // The last line of a run that is still writing may be partial; anything else is worth saying.
    if (!parsed) {
      log_.errors.push_back(log_.path + ":" + std::to_string(line_no) + ": not a JSON object");
      return;
    }
    add(*parsed);
  } catch (const std::exception& e) {
    log_.errors.push_back(log_.path + ":" + std::to_string(line_no) + ": " + e.what());
  }
}

// What follows an `end` event is another invocation into the same folder: its compile and end events
// replace the old ones.
void RunLogBuilder::another_invocation() {
  ended_ = false;
  log_.compile_seconds = -1;
  log_.end_status.clear();
  log_.end_message.clear();
}

void RunLogBuilder::add(const LogLine& line) {
  const nlohmann::json& j = line.event;
  if (!line.step && !j.is_object()) return;
  if (!line.step) {
    const std::string event = j.value("event", "");
    if (ended_ && event != "end") another_invocation();
    if (event == "compile") {
      log_.compile_seconds = j.value("seconds", -1.0);
      log_.compiled = true;
    } else if (event == "start") {
      log_.recipe = j.value("recipe", "");
      log_.compiled = j.value("compile", false);
      log_.dtype = j.value("dtype", "");
      log_.threads = j.value("threads", int64_t{0});
      log_.setup = j.value("setup", "");
      if (!j.value("resume", false) || log_.started.empty()) log_.started = j.value("time", "");
    } else if (event == "checkpoint") {
      checkpoints_.emplace_back(j.value("step", last_step_), j.value("path", ""));
    } else if (event == "end") {
      ended_ = true;
      log_.end_status = j.value("status", "");
      log_.end_message = j.value("message", "");
    }
    return;
  }
  const StepMetrics& m = *line.step;
  if (ended_) another_invocation();
  if (m.step <= last_step_) {
    steps_.erase(std::remove_if(steps_.begin(), steps_.end(), [&](const auto& s) { return s.first >= m.step; }),
                 steps_.end());
    checkpoints_.erase(std::remove_if(checkpoints_.begin(), checkpoints_.end(),
                                      [&](const auto& c) { return c.first >= m.step; }),
                       checkpoints_.end());
  }
  last_step_ = m.step;
  steps_.emplace_back(m.step, m);
}

RunLog RunLogBuilder::result() const {
  RunLog out = log_;
  for (const auto& [step, m] : steps_) out.steps.push_back(m);
  for (const auto& c : checkpoints_) out.checkpoints.push_back(c.second);
  return out;
}

RunLog read_run_log(const std::string& file) {
  RunLogBuilder builder(file);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    RunLog log;
    log.path = file;
    log.errors.push_back(file + ": cannot open");
    return log;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) builder.add_line(line, ++line_no);
  return builder.result();
}

std::vector<std::string> LogTail::read_new_lines() {
  std::vector<std::string> lines;
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  if (!in) return lines;  // not written yet
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size < offset_) {
    offset_ = 0;
    partial_.clear();
  }
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  offset_ += chunk.size();
  partial_ += chunk;
  size_t start = 0, newline;
  while ((newline = partial_.find('\n', start)) != std::string::npos) {
    lines.push_back(partial_.substr(start, newline - start));
    start = newline + 1;
  }
  partial_.erase(0, start);
  return lines;
}

}  // namespace tb::training
