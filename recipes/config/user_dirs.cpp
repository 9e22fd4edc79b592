#include "config/user_dirs.h"

#include <cstdlib>
#include <filesystem>

#include "config/config.h"

namespace tb::config {

namespace fs = std::filesystem;

std::string user_data_dir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/') return (fs::path(xdg) / "tunebench").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".local" / "share" / "tunebench").string();
}

std::string user_runs_dir() { return (fs::path(user_data_dir()) / "runs").string(); }

std::string window_runs_folder(const std::string& output_dir) {
  fs::path p = fs::path(output_dir).lexically_normal();
  while (p.has_relative_path() && (p.filename().empty() || p.filename() == ".")) p = p.parent_path();  // "runs/" -> "runs"
  if (p.is_absolute()) return p.string();
  const std::string last = p.empty() || p.filename() == ".." ? std::string() : p.filename().string();
  return (last.empty() ? fs::path(user_runs_dir()) : fs::path(user_runs_dir()) / last).string();
}

std::string installed_runs_folder(const std::string& config_path, const std::string& output_dir) {
  if (output_dir.empty() || fs::path(output_dir).is_absolute()) return {};
  if (bundled_config_name(config_path).empty() || share_is_build_tree()) return {};
  return window_runs_folder(output_dir);
}

}  // namespace tb::config
