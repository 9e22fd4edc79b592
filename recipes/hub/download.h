// `tunebench-cli download`: a repo's files at a revision into the shared Hugging Face cache (cache.h), or
// into a plain folder, the way huggingface_hub's snapshot_download fetches them:
//   - the revision's file list from the Hub API (/api/models/<repo>/revision/<rev>: the commit, each
//     file's size and LFS sha256), filtered by --include / --exclude (fnmatch patterns, `*` crossing `/`);
//   - each file by /<repo>/resolve/<commit>/<path>: a HEAD for its etag, size and where it lives (an LFS
//     file redirects to a CDN host, which never sees the token), then a GET into blobs/<etag>.incomplete,
//     resumed with Range after a dropped connection, 429 (Retry-After) and 5xx retried with backoff;
//   - an LFS file's bytes checked against its sha256 before the blob is placed; snapshots/<commit>/<path>
//     linked to it; refs/<revision> written.
// Files already in the cache are not fetched again; offline ($HF_HUB_OFFLINE or `offline`), only the
// cache is read. Errors are HubError: one line naming the repo and what to do.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hub/cache.h"

namespace tb::hub {

struct HubError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DownloadOptions {
  std::string repo_id;  // org/name
  RepoType type = RepoType::Model;
  std::string revision = "main";  // a branch, a tag or a commit
  std::vector<std::string> include, exclude;
  std::string cache_dir;  // empty: hub_cache_dir()
  std::string local_dir;  // non-empty: plain files here instead of the cache
  std::string token;      // empty: stored_token()
  std::string endpoint;   // empty: $HF_ENDPOINT, else https://huggingface.co
  bool offline = false;   // also when $HF_HUB_OFFLINE is 1/true/yes/on
  int retries = 5;        // per request, after the first try
};

struct DownloadProgress {
  int64_t bytes_done = 0, bytes_total = 0;  // over the repo's files (those already here count as done)
  int64_t fetched = 0;                       // transferred so far (the speed)
  size_t files_done = 0, files_total = 0;
  std::string file;  // the one in flight
};

struct DownloadResult {
  std::string folder;  // the snapshot folder (or local_dir)
  std::string commit;
  std::vector<std::string> files;  // the repo paths there, sorted
  int64_t bytes = 0;               // their size
  int64_t fetched = 0;             // bytes transferred this time
  double seconds = 0;
};

// What a download would bring, asked of the Hub before any file's bytes are fetched (the window's "Get
// model…" shows it first): the commit, the files' total size and the part the cache lacks, and the repo's
// config.json (a few KiB, fetched whole; "" when it has none) for a memory estimate.
struct DownloadPlan {
  std::string commit;
  size_t files = 0;
  int64_t bytes = 0;
  int64_t bytes_to_fetch = 0;
  std::vector<std::string> paths;  // the files, repo-relative
  std::string config_json;
};
DownloadPlan plan_download(const DownloadOptions& options);

// One line for a progress display: "120.5 MiB of 1.2 GiB (9%), 48.1 MiB/s, 0:23 left: model.safetensors".
// `seconds`: since the download began.
std::string progress_text(const DownloadProgress& p, double seconds);

// A stop (config/interrupt.h) ends it between pieces of a file: the partial file is kept for a resume.
DownloadResult download(const DownloadOptions& options, const std::function<void(const DownloadProgress&)>& progress = {});

}  // namespace tb::hub
