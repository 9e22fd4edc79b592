#include "hub/cached_models.h"

#include <algorithm>
#include <filesystem>

#include "hub/cache.h"

namespace fs = std::filesystem;

namespace tb::hub {

namespace {

// Per repo of `type` in the cache, the snapshot refs/main names (else the newest one) that holds `marker`
// ("" : any snapshot); sorted by repo id.
std::vector<CachedModel> cached_repos(const std::string& cache_dir, RepoType type, const std::string& marker) {
  const fs::path root = cache_dir.empty() ? fs::path(hub_cache_dir()) : fs::path(cache_dir);
  const std::string prefix = type == RepoType::Model ? "models--" : "datasets--";
  std::vector<CachedModel> out;
  std::error_code ec;
  const auto usable = [&](const fs::path& snapshot) {
    return fs::is_directory(snapshot, ec) && (marker.empty() || fs::exists(snapshot / marker, ec));
  };
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // models--org--name: the first "--" after the prefix separates org and name.
    std::string repo = name.substr(prefix.size());
    if (const auto sep = repo.find("--"); sep != std::string::npos) repo.replace(sep, 2, "/");
    const RepoCache cache(root, type, repo);
    std::optional<std::string> commit = cache.commit_of("main");
    if (!commit || !usable(cache.snapshot(*commit))) {  // else the newest snapshot
      commit.reset();
      fs::file_time_type newest{};
      for (auto s = fs::directory_iterator(it->path() / "snapshots", ec); !ec && s != fs::directory_iterator(); s.increment(ec)) {
        if (!usable(s->path())) continue;
        const auto t = fs::last_write_time(s->path(), ec);
        if (!commit || t > newest) commit = s->path().filename().string(), newest = t;
      }
      ec.clear();
    }
    if (!commit) continue;
    CachedModel m;
    m.repo_id = repo;
    m.commit = *commit;
    m.folder = cache.snapshot(*commit).string();
    for (auto f = fs::recursive_directory_iterator(m.folder, ec); !ec && f != fs::recursive_directory_iterator(); f.increment(ec))
      if (fs::is_regular_file(f->path(), ec)) m.bytes += int64_t(fs::file_size(f->path(), ec));  // through the links
    ec.clear();
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) { return a.repo_id < b.repo_id; });
  return out;
}

}  // namespace

std::vector<CachedModel> cached_models(const std::string& cache_dir) {
  return cached_repos(cache_dir, RepoType::Model, "config.json");
}

std::vector<CachedModel> cached_datasets(const std::string& cache_dir) {
  return cached_repos(cache_dir, RepoType::Dataset, "");
}

std::string snapshot_repo_id(const std::string& folder) {
  const fs::path p = fs::path(folder).lexically_normal();
  const fs::path commit = p.filename().empty() ? p.parent_path() : p;
  const fs::path snapshots = commit.parent_path(), repo = snapshots.parent_path();
  const std::string name = repo.filename().string();
  if (snapshots.filename() != "snapshots" || name.rfind("models--", 0) != 0 || !is_commit_hash(commit.filename().string()))
    return "";
  std::string id = name.substr(8);
  if (const auto sep = id.find("--"); sep != std::string::npos) id.replace(sep, 2, "/");
  return id;
}

}  // namespace tb::hub
