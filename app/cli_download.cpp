#include "cli_download.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>

#include "config/interrupt.h"
#include "hub/fetch_models.h"
#include "text/json_text.h"

CLI::App* add_download_command(CLI::App& app, DownloadArgs& a) {
  CLI::App* d = app.add_subcommand(
      "download", "fetch a Hugging Face Hub repo into the cache every Hugging Face tool shares (or a plain folder)");
  tb::hub::DownloadOptions& o = a.options;
  d->add_option("repo_id", o.repo_id, "org/name, e.g. Qwen/Qwen3-0.6B")->required();
  d->add_option("--repo-type", a.repo_type, "model or dataset")->check(CLI::IsMember({"model", "dataset"}))->capture_default_str();
  d->add_option("--revision", o.revision, "a branch, tag or commit")->capture_default_str();
  d->add_option("--include", o.include, "only files matching these patterns (fnmatch, e.g. '*.json' 'sub/')");
  d->add_option("--exclude,--ignore-patterns", o.exclude, "leave out files matching these patterns");
  d->add_option("--cache-dir", o.cache_dir, "the cache (default: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)");
  d->add_option("--local-dir,--output-dir", o.local_dir, "plain files in this folder instead of the cache");
  d->add_option("--token,--hf-token", o.token, "an access token (default: $HF_TOKEN, else the token huggingface-cli login saved)");
  d->add_flag("--offline", o.offline, "use the cache only (also when $HF_HUB_OFFLINE=1)");
  return d;
}

DownloadProgressPrinter::DownloadProgressPrinter(std::string prefix)
    : prefix_(std::move(prefix)), tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void DownloadProgressPrinter::operator()(const tb::hub::DownloadProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(200) && p.bytes_done < p.bytes_total) return;
    last_draw_ = now;
    std::cerr << "\r\033[K" << prefix_ << tb::hub::progress_text(p, seconds) << std::flush;
  } else if (const int64_t tenth = p.bytes_total > 0 ? p.bytes_done * 10 / p.bytes_total : 0; tenth != last_tenth_) {
    last_tenth_ = tenth;
    std::cerr << prefix_ << tb::hub::progress_text(p, seconds) << "\n";
  }
}

void DownloadProgressPrinter::end_line() {
  if (tty_) std::cerr << "\n";
}

// Progress on stderr; the last line of stdout is the JSON result: the folder, the commit, the files, their
// bytes, the bytes fetched, the seconds.
int cmd_download(DownloadArgs& a) {
  a.options.type = a.repo_type == "dataset" ? tb::hub::RepoType::Dataset : tb::hub::RepoType::Model;
  DownloadProgressPrinter progress("download: ");
  try {
    const auto r = tb::hub::download(a.options, std::ref(progress));
    progress.end_line();
    std::cerr << "download: " << a.options.repo_id << " at " << (r.commit.empty() ? a.options.revision : r.commit)
              << " in " << r.folder << "\n";
    const nlohmann::json line = {{"folder", r.folder}, {"commit", r.commit}, {"files", r.files},
                                 {"bytes", r.bytes},   {"fetched", r.fetched}, {"seconds", r.seconds}};
    std::cout << tb::text::json_text(line) << "\n";
  } catch (const std::exception& e) {
    progress.end_line();
    std::cerr << "tunebench-cli: download: " << e.what() << "\n";
    return dynamic_cast<const tb::config::Interrupted*>(&e) ? 130 : 1;
  }
  return 0;
}

bool fetch_models_for(const std::string& command, const tb::config::Config& cfg) {
  std::string repo;
  std::unique_ptr<DownloadProgressPrinter> progress;
  try {
    tb::hub::fetch_missing_repos(cfg, [&](const tb::hub::MissingRepo& r, const tb::hub::DownloadProgress& p) {
      if (r.repo_id != repo) {
        if (progress) progress->end_line();
        repo = r.repo_id;
        progress = std::make_unique<DownloadProgressPrinter>(command + ": fetching " + r.repo_id + ": ");
      }
      (*progress)(p);
    });
    if (progress) progress->end_line();
    return true;
  } catch (const std::exception& e) {
    if (progress) progress->end_line();
    std::cerr << "tunebench-cli: " << command << ": " << e.what() << "\n";
    return false;
  }
}
