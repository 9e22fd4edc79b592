// `tunebench-cli download REPO_ID`: its options (huggingface-cli's and torchtune's `tune download`
// spellings) and its output; the work is the engine's (hub/download.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "hub/download.h"

struct DownloadArgs {
  tb::hub::DownloadOptions options;
  std::string repo_type = "model";
};

CLI::App* add_download_command(CLI::App& app, DownloadArgs& args);
int cmd_download(DownloadArgs& args);
