#include "run_harness.h"

#include <chrono>
#include <iostream>

#include "components/builtin.h"
#include "components/hub_datasets.h"
#include "config/interrupt.h"
#include "config/schema.h"
#include "data/row_stream.h"
#include "hub/fetch_models.h"
#include "training/metric_loggers.h"
#include "training/output_lock.h"
#include "training/run_checkpoint.h"

namespace tb {

namespace {

// A model the config names by Hub repo id and the cache lacks, and the files of a Hub dataset it names, are
// fetched first; the log says what the run waits for, once a tenth.
void fetch_models(const config::Config& cfg, training::MetricLogger& log) {
  const auto start = std::chrono::steady_clock::now();
  std::string repo;
  int64_t tenth = -1;
  const auto report = [&](const std::string& id, const std::string& what, const hub::DownloadProgress& p) {
    if (id != repo) repo = id, tenth = -1;
    const int64_t now = p.bytes_total > 0 ? p.bytes_done * 10 / p.bytes_total : 0;
    if (now == tenth) return;
    tenth = now;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log.log_event({{"event", "info"},
                   {"message", "waiting for " + id + " (" + what + ") from the Hub: " + hub::progress_text(p, seconds)},
                   {"download", {{"repo", id}, {"bytes_done", p.bytes_done}, {"bytes_total", p.bytes_total}}}});
  };
  hub::fetch_missing_repos(cfg, [&](const hub::MissingRepo& r, const hub::DownloadProgress& p) { report(r.repo_id, r.key, p); });
  components::fetch_config_datasets(cfg, [&](const std::string& id, const hub::DownloadProgress& p) { report(id, "dataset", p); });
}

}  // namespace

training::RunResult run_with_harness(const RecipeInfo& recipe, const config::Config& cfg, training::RunControl& control,
                                     const RunHarness& harness) {
  training::RunResult result;
  std::unique_ptr<training::OutputDirLock> lock;  // before the log opens: one run per output_dir
  std::unique_ptr<training::FanOutLogger> logger;
  std::vector<std::string> claimed;
  try {
    if (harness.rank == 0) {
      lock = std::make_unique<training::OutputDirLock>(config::setting_string(cfg, "output_dir"));
      // Before the log opens: a folder holding another run's checkpoints is refused untouched.
      claimed = training::claim_output_dir(cfg, training::metrics_log_dir(cfg) + "/metrics.jsonl");
      logger = training::make_metric_logger(cfg, components::builtin());
      if (harness.print_progress && !logger->contains<training::StdoutLogger>())
        logger->add(std::make_shared<training::StdoutLogger>());
    } else {
      logger = std::make_unique<training::FanOutLogger>();
      logger->add(std::make_shared<training::StdoutLogger>(std::cerr));
      logger->set_log_level(training::LogLevel::Error);
    }
  } catch (const std::exception& e) {
    result.status = training::RunStatus::Failed;
    result.message = e.what();
    return result;
  }
  for (const auto& l : harness.loggers) logger->add(l);
  for (const auto& line : claimed) logger->log_event({{"event", "info"}, {"message", line}});
  try {
    // Reading and tokenizing the dataset hear a stop too (training steps check control.stop themselves;
    // run_recipe reports a stop heard in setup).
    const config::InterruptScope interruptible(&control.stop);
    // A large dataset's first pass says how far it is, once a tenth.
    int64_t tenth = -1;
    const data::ReadProgressScope reading([&](const data::ReadProgress& p) {
      const int64_t now = p.bytes_total > 0 ? int64_t(p.bytes_read * 10 / p.bytes_total) : 0;
      if (now == tenth && !p.done) return;
      tenth = now;
      logger->log_event({{"event", "info"},
                         {"message", "reading " + p.files + ": " + data::read_progress_text(p)},
                         {"reading", {{"rows", p.rows}, {"bytes_read", p.bytes_read}, {"bytes_total", p.bytes_total}}}});
    });
    fetch_models(cfg, *logger);
    result = recipe.run(cfg, *logger, control);
  } catch (const std::exception& e) {
    // Recipes report their own end event; one that throws gets it here.
    result.status = training::RunStatus::Failed;
    result.message = e.what();
    logger->log_event({{"event", "end"}, {"status", "failed"}, {"message", result.message}});
  }
  logger->flush();
  return result;
}

}  // namespace tb
