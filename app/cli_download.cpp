#include "cli_download.h"

#include <unistd.h>

#include <chrono>
#include <iostream>

#include "config/interrupt.h"
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

// Progress on stderr (a line rewritten on a terminal; a line a tenth otherwise); the last line of stdout
// is the JSON result: the folder, the commit, the files, their bytes, the bytes fetched, the seconds.
int cmd_download(DownloadArgs& a) {
  a.options.type = a.repo_type == "dataset" ? tb::hub::RepoType::Dataset : tb::hub::RepoType::Model;
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  int64_t last_tenth = -1;
  auto last_draw = start;
  const auto progress = [&](const tb::hub::DownloadProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - start).count();
    if (tty) {
      if (now - last_draw < std::chrono::milliseconds(200) && p.bytes_done < p.bytes_total) return;
      last_draw = now;
      std::cerr << "\r\033[Kdownload: " << tb::hub::progress_text(p, seconds) << std::flush;
    } else if (const int64_t tenth = p.bytes_total > 0 ? p.bytes_done * 10 / p.bytes_total : 0; tenth != last_tenth) {
      last_tenth = tenth;
      std::cerr << "download: " << tb::hub::progress_text(p, seconds) << "\n";
    }
  };
  try {
    const auto r = tb::hub::download(a.options, progress);
    if (tty) std::cerr << "\n";
    std::cerr << "download: " << a.options.repo_id << " at " << (r.commit.empty() ? a.options.revision : r.commit)
              << " in " << r.folder << "\n";
    const nlohmann::json line = {{"folder", r.folder}, {"commit", r.commit}, {"files", r.files},
                                 {"bytes", r.bytes},   {"fetched", r.fetched}, {"seconds", r.seconds}};
    std::cout << tb::text::json_text(line) << "\n";
  } catch (const std::exception& e) {
    if (tty) std::cerr << "\n";
    std::cerr << "tunebench-cli: download: " << e.what() << "\n";
    return dynamic_cast<const tb::config::Interrupted*>(&e) ? 130 : 1;
  }
  return 0;
}
