#include "hub/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace tb::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0 && !env("HOME").empty()) return env("HOME") + path.substr(1);
  return path;
}

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n"), last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

}  // namespace

std::string hf_home() {
  if (const std::string home = env("HF_HOME"); !home.empty()) return expand_home(home);
  const std::string xdg = env("XDG_CACHE_HOME");
  return expand_home((xdg.empty() ? std::string("~/.cache") : xdg) + "/huggingface");
}

std::string hub_cache_dir() {
  const std::string dir = env("HF_HUB_CACHE");
  return dir.empty() ? hf_home() + "/hub" : expand_home(dir);
}

namespace {
std::string token_path() { return env("HF_TOKEN_PATH").empty() ? hf_home() + "/token" : expand_home(env("HF_TOKEN_PATH")); }
}  // namespace

std::string stored_token() {
  if (const std::string token = trimmed(env("HF_TOKEN")); !token.empty()) return token;
  const std::string path = token_path();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > 4096) return "";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return trimmed(ss.str());
}

void save_token(const std::string& token) {
  const std::string clean = trimmed(token);
  if (clean.empty() || clean.find_first_of(" \t\r\n") != std::string::npos) throw std::runtime_error("a token is one word");
  const fs::path path = token_path();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // Written beside it and renamed over it: a reader never sees half a token.
  const fs::path temporary = path.string() + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + temporary.string() + ": " + std::strerror(errno));
  const bool written = ::write(fd, clean.data(), clean.size()) == ssize_t(clean.size());
  const int saved_errno = errno;
  if (::close(fd) != 0 || !written) {
    fs::remove(temporary, ec);
    throw std::runtime_error("cannot write " + temporary.string() + ": " + std::strerror(written ? errno : saved_errno));
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(temporary, ec);
    throw std::runtime_error("cannot replace " + path.string() + ": " + why);
  }
}

bool hub_offline() {
  std::string v = env("HF_HUB_OFFLINE");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::vector<std::string> snapshot_files(const fs::path& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(folder).generic_string();  // not through the links
    if (rel.rfind(".cache/", 0) == 0 || rel == ".cache") continue;
    if (fs::is_regular_file(it->path())) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string repo_folder_name(RepoType type, const std::string& repo_id) {
  std::string name = type == RepoType::Model ? "models" : "datasets";
  size_t start = 0;
  while (true) {
    const size_t slash = repo_id.find('/', start);
    name += "--" + repo_id.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return name;
}

bool is_commit_hash(const std::string& text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

RepoCache::RepoCache(const fs::path& cache_dir, RepoType type, const std::string& repo_id)
    : root_(cache_dir / repo_folder_name(type, repo_id)), locks_(cache_dir / ".locks" / repo_folder_name(type, repo_id)) {}

std::optional<std::string> RepoCache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(root_ / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  commit = trimmed(commit);
  return is_commit_hash(commit) ? std::optional<std::string>(commit) : std::nullopt;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  const fs::path ref = root_ / "refs" / revision;
  fs::create_directories(ref.parent_path());
  const fs::path tmp = ref.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;  // no newline, as huggingface_hub writes it
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, ref);
}

void RepoCache::link(const std::string& commit, const std::string& path, const std::string& etag) const {
  const fs::path file = snapshot(commit) / path;
  fs::create_directories(file.parent_path());
  const fs::path target = fs::relative(blob(etag), file.parent_path());
  std::error_code ec;
  fs::remove(file, ec);
  fs::create_symlink(target, file);
}

bool RepoCache::has_file(const std::string& commit, const std::string& path) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot(commit) / path, ec);  // follows the link to its blob
}

FileLock::FileLock(const fs::path& path) {
  fs::create_directories(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the lock " + path.string() + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd_);
      throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(errno));
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace tb::hub
