// The Hugging Face cache, laid out byte for byte as huggingface_hub lays it out, so that what Tunebench
// downloads transformers finds, and what they downloaded Tunebench finds:
//   $HF_HUB_CACHE (default $HF_HOME/hub; $HF_HOME defaults to $XDG_CACHE_HOME/huggingface, then
//   ~/.cache/huggingface) holds, per repo, models--org--name/ (datasets--org--name/):
//     blobs/<etag>                   each file's bytes once (<etag>.incomplete while it downloads)
//     snapshots/<commit>/<path>      relative symbolic links into blobs/
//     refs/<revision>                the commit a branch or tag pointed at when last fetched
//   and .locks/models--org--name/<etag>.lock, taken while a blob is written.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tb::hub {

enum class RepoType { Model, Dataset };

std::string hf_home();       // $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
std::string hub_cache_dir(); // $HF_HUB_CACHE, else hf_home()/hub
// The token huggingface_hub would use: $HF_TOKEN, else the file $HF_TOKEN_PATH or hf_home()/token.
std::string stored_token();
// Saves `token` where huggingface_hub keeps it ($HF_TOKEN_PATH, else hf_home()/token; readable by this
// user only, replaced whole), so every Hugging Face tool on this machine uses it. Throws std::runtime_error.
void save_token(const std::string& token);

// Whether $HF_HUB_OFFLINE asks for the cache only (1, true, yes, on; any case).
bool hub_offline();
// The files of a snapshot (or a plain download folder), repo-relative and sorted, read through the links;
// huggingface_hub's .cache/ metadata left out.
std::vector<std::string> snapshot_files(const std::filesystem::path& folder);

// "models--org--name" / "datasets--org--name".
std::string repo_folder_name(RepoType type, const std::string& repo_id);
// Whether `text` is a full commit hash (40 hexadecimal digits, lower case).
bool is_commit_hash(const std::string& text);

class RepoCache {
 public:
  RepoCache(const std::filesystem::path& cache_dir, RepoType type, const std::string& repo_id);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const { return root_ / "blobs" / etag; }
  std::filesystem::path incomplete(const std::string& etag) const { return root_ / "blobs" / (etag + ".incomplete"); }
  std::filesystem::path snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }
  std::filesystem::path lock_file(const std::string& etag) const { return locks_ / (etag + ".lock"); }

  // The commit `revision` names here: itself when it is a commit hash, else refs/<revision> (nullopt: unknown).
  std::optional<std::string> commit_of(const std::string& revision) const;
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<path> -> ../../blobs/<etag> (relative, one "../" per folder of `path`).
  void link(const std::string& commit, const std::string& path, const std::string& etag) const;
  // Whether snapshots/<commit>/<path> is there and leads to a file.
  bool has_file(const std::string& commit, const std::string& path) const;

 private:
  std::filesystem::path root_, locks_;
};

// An exclusive lock on a file (flock), held while this lives: two processes never write one blob at once.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tb::hub
