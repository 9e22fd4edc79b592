// `tunebench-cli download REPO_ID`: its options (huggingface-cli's and torchtune's `tune download`
// spellings) and its output; the work is the engine's (hub/download.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "hub/download.h"

struct DownloadArgs {
  tb::hub::DownloadOptions options;
  std::string repo_type = "model";
};

CLI::App* add_download_command(CLI::App& app, DownloadArgs& args);
int cmd_download(DownloadArgs& args);

// Download progress on stderr: one line rewritten on a terminal, else a line a tenth.
class DownloadProgressPrinter {
 public:
  explicit DownloadProgressPrinter(std::string prefix);
  void operator()(const tb::hub::DownloadProgress& p);
  void end_line();  // on a terminal, ends the rewritten line

 private:
  std::string prefix_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_tenth_ = -1;
};

// Fetch on demand before eval, generate and export: the models `cfg` names by repo id that the cache
// lacks (hub/fetch_models.h), with progress. False (said on stderr) when one cannot be fetched.
bool fetch_models_for(const std::string& command, const tb::config::Config& cfg);
