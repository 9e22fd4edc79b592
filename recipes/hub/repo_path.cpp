#include "hub/repo_path.h"

#include <filesystem>
#include <regex>
#include <stdexcept>

#include "config/config.h"
#include "hub/cache.h"

namespace fs = std::filesystem;

namespace tb::hub {

bool looks_like_repo_id(const std::string& text) {
  static const std::regex kRepoId(R"([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]+)?)");
  return text.size() < 256 && std::regex_match(text, kRepoId) && text.find("..") == std::string::npos;
}

std::string resolve_model_path(const std::string& path, bool required) {
  const std::string local = config::resolve_input_path(path);
  std::error_code ec;
  if (!looks_like_repo_id(path) || fs::exists(local, ec)) return local;
  const auto at = path.find('@');
  const std::string repo = path.substr(0, at), revision = at == std::string::npos ? "main" : path.substr(at + 1);
  const fs::path cache_dir = hub_cache_dir();
  const RepoCache cache(cache_dir, RepoType::Model, repo);
  if (const auto commit = cache.commit_of(revision); commit && fs::is_directory(cache.snapshot(*commit), ec))
    return cache.snapshot(*commit).string();
  if (!required) return local;
  throw std::runtime_error("'" + path + "' is no folder here, and as a Hub repo id it is not in the cache (" +
                           cache_dir.string() + "): run `tunebench-cli download " + repo +
                           (at == std::string::npos ? std::string() : " --revision " + revision) + "` first");
}

}  // namespace tb::hub
