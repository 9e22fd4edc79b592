// Where a user's own files go (the XDG base directories), for the window and an installed CLI: runs in the user's data folder,
// never beside the programs or under the share folder the bundled configs come from. Torch-free.
#pragma once

#include <string>

namespace tb::config {

// $XDG_DATA_HOME/tunebench (default ~/.local/share/tunebench).
std::string user_data_dir();
// user_data_dir()/runs: the folder the window's runs go to when the setup names no absolute one.
std::string user_runs_dir();

// The absolute folder a setup's runs go to in the window: an absolute `output_dir` as it is; a relative
// one (the bundled configs' `build/runs/tiny_full`, meant for the CLI run from the source tree) under
// user_runs_dir() by its last part (`.../tunebench/runs/tiny_full`), so runs of one config stay together.
std::string window_runs_folder(const std::string& output_dir);

// Where a bundled config's run goes once installed: when `config_path` is a bundled config of an installed
// share folder (not a build tree's) and the `output_dir` its file says is relative, the window's folder for
// it (window_runs_folder: `~/.local/share/tunebench/runs/tiny_full`), so an installed CLI never writes
// `build/runs/...` under whatever folder it was started in. Empty otherwise: an output_dir given as an
// override, or in the user's own config, stays relative to the working folder. The config loader applies
// it (load_file), before `${output_dir}` is interpolated.
std::string installed_runs_folder(const std::string& config_path, const std::string& output_dir);

}  // namespace tb::config
