#include "hub/download.h"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/interrupt.h"
#include "config/regular_file.h"
#include "hub/blob_writer.h"
#include "hub/http.h"
#include "hub/sha256.h"

namespace fs = std::filesystem;

namespace tb::hub {

namespace {

using Clock = std::chrono::steady_clock;

struct RemoteFile {
  std::string path;
  int64_t size = 0;
  std::string etag;  // expected: the LFS sha256, else the git blob id
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// huggingface_hub's filter: a pattern ending in "/" means the folder's files; `*` matches "/" too.
bool matches(const std::string& path, const std::vector<std::string>& patterns) {
  for (std::string p : patterns) {
    if (!p.empty() && p.back() == '/') p += "*";
    if (::fnmatch(p.c_str(), path.c_str(), 0) == 0) return true;
  }
  return false;
}

bool wanted(const DownloadOptions& o, const std::string& path) {
  return (o.include.empty() || matches(path, o.include)) && (o.exclude.empty() || !matches(path, o.exclude));
}

std::string normalized_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

// Sleeps in slices, hearing a stop.
void pause_for(double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    config::check_interrupt();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

class Session {
 public:
  explicit Session(const DownloadOptions& o) : o_(o) {
    endpoint_ = !o.endpoint.empty() ? o.endpoint : !env("HF_ENDPOINT").empty() ? env("HF_ENDPOINT") : "https://huggingface.co";
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
    token_ = o.token.empty() ? stored_token() : o.token;
    kind_ = o.type == RepoType::Model ? "model" : "dataset";
    prefix_ = o.type == RepoType::Model ? "" : "datasets/";
  }

  const std::string& endpoint() const { return endpoint_; }

  // The revision's commit and files (the API), filtered.
  std::pair<std::string, std::vector<RemoteFile>> list_files() {
    const std::string url = endpoint_ + "/api/" + (o_.type == RepoType::Model ? "models/" : "datasets/") + o_.repo_id +
                            "/revision/" + url_quote(o_.revision) + "?blobs=true";
    HttpResponse r = send("GET", url, "the file list");
    for (int hop = 0; hop < 5 && r.status >= 300 && r.status < 400 && !r.header("location").empty() &&
                      r.header("location").front() == '/';
         ++hop)
      r = send("GET", endpoint_ + r.header("location"), "the file list");  // a renamed repo
    if (r.status != 200) fail(r, "");
    nlohmann::json info;
    try {
      info = nlohmann::json::parse(r.body);
    } catch (const nlohmann::json::exception& e) {
      throw HubError(o_.repo_id + ": the Hub's answer is not JSON (" + url + ")");
    }
    const std::string commit = info.value("sha", "");
    if (!is_commit_hash(commit)) throw HubError(o_.repo_id + ": the Hub named no commit for revision '" + o_.revision + "'");
    std::vector<RemoteFile> files;
    for (const auto& s : info.value("siblings", nlohmann::json::array())) {
      RemoteFile f;
      f.path = s.value("rfilename", "");
      if (f.path.empty() || !wanted(o_, f.path)) continue;
      if (f.path.find("..") != std::string::npos || f.path.front() == '/')
        throw HubError(o_.repo_id + ": the Hub lists a file outside the repo: " + f.path);
      f.size = s.value("size", int64_t(0));
      f.etag = s.contains("lfs") && s["lfs"].is_object() ? s["lfs"].value("sha256", "") : s.value("blobId", "");
      files.push_back(std::move(f));
    }
    std::sort(files.begin(), files.end(), [](const RemoteFile& a, const RemoteFile& b) { return a.path < b.path; });
    return {commit, files};
  }

  // Where `file` is read from and its etag and size as the resolve endpoint says (following the Hub's own
  // relative redirects; an absolute one is the CDN: its URL is where the bytes are).
  struct Located {
    std::string url, etag;
    int64_t size = -1;
  };
  Located locate(const std::string& commit, const RemoteFile& file) {
    std::string url = endpoint_ + "/" + prefix_ + o_.repo_id + "/resolve/" + commit + "/" + url_quote(file.path, "/");
    for (int hop = 0; hop < 5; ++hop) {
      const HttpResponse r = send("HEAD", url, file.path);
      const std::string location = r.header("location");
      if (r.status >= 300 && r.status < 400 && !location.empty() && location.front() == '/') {
        url = endpoint_ + location;  // a renamed repo: same host, the token goes along
        continue;
      }
      Located at;
      if (r.status >= 300 && r.status < 400 && !location.empty()) {
        at.url = location;
        at.etag = normalized_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
        at.size = std::atoll((!r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length")).c_str());
      } else if (r.status == 200) {
        at.url = url;
        at.etag = normalized_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
        at.size = std::atoll((!r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length")).c_str());
      } else {
        fail(r, file.path);
      }
      if (at.etag.empty()) throw HubError(o_.repo_id + ": the Hub gave no etag for " + file.path);
      return at;
    }
    throw HubError(o_.repo_id + ": too many redirects for " + file.path);
  }

  // A small file's bytes whole (config.json): "" when the revision has no such file.
  std::string read_small(const std::string& commit, const RemoteFile& file) {
    const Located at = locate(commit, file);
    const HttpResponse r = send("GET", at.url, file.path);
    if (r.status != 200) fail(r, file.path);
    return r.body;
  }

  // Fetches `at` into `partial` (resumed from its size), then checks and returns the bytes fetched.
  int64_t fetch(const Located& at, const std::string& path, const fs::path& partial, const std::function<void(int64_t)>& moved) {
    // An LFS file's etag is its sha256: hashed as the bytes arrive, on the writer's thread (a resumed
    // file's first part from disk), so the check costs no second pass over the file.
    const bool lfs = at.etag.size() == 64;
    std::optional<std::string> digest;
    int64_t fetched = 0;
    if (at.size == 0) std::ofstream(partial, std::ios::binary | std::ios::trunc);  // an empty file: no bytes to ask for
    for (int attempt = 0;; ++attempt) {
      std::error_code ec;
      const int64_t have = fs::exists(partial, ec) ? int64_t(fs::file_size(partial, ec)) : 0;
      if (at.size >= 0 && have == at.size) break;
      if (attempt > o_.retries + 2)  // a server that keeps sending another length than it announced
        throw HubError(o_.repo_id + ": " + path + ": the Hub announced " + std::to_string(at.size) + " bytes and sent " +
                       std::to_string(have) + ", " + std::to_string(attempt) + " times; the partial file is kept");
      std::vector<std::string> headers = auth_for(at.url);
      headers.push_back("Accept-Encoding: identity");
      if (have > 0) headers.push_back("Range: bytes=" + std::to_string(have) + "-");
      std::optional<BlobWriter> out;  // writes and hashes on a thread of its own
      bool stopped = false;
      std::string write_error;
      const auto sink = [&](const char* data, size_t n, long status) {
        // 200 to a Range request: the server sends it whole, so it is written from the start.
        if (!out) out.emplace(partial, status == 206, lfs, have);
        if (!out->write(data, n)) return write_error = out->error(), false;
        fetched += int64_t(n);
        moved(int64_t(n));
        try {
          config::check_interrupt();
        } catch (const config::Interrupted&) {
          return stopped = true, false;
        }
        return true;
      };
      const auto finish = [&] {
        if (out && !out->finish() && write_error.empty()) write_error = out->error();
      };
      HttpResponse r;
      try {
        r = http_.get(at.url, headers, sink);
        finish();
      } catch (const CertificateError& e) {
        finish();
        throw certificate_refused(e);
      } catch (const TransportError& e) {
        finish();
        if (stopped) throw config::Interrupted();
        if (!write_error.empty())
          throw HubError(o_.repo_id + ": cannot write " + partial.string() + " (" + write_error +
                         "); the partial file is kept, and the next download resumes it");
        if (attempt >= o_.retries)
          throw HubError(o_.repo_id + ": " + path + ": " + e.what() + " after " + std::to_string(attempt + 1) +
                         " tries; the partial file is kept, and the next download resumes it");
        pause_for(backoff(attempt));
        continue;
      }
      if (!write_error.empty())
        throw HubError(o_.repo_id + ": cannot write " + partial.string() + " (" + write_error +
                       "); the partial file is kept, and the next download resumes it");
      if (r.status == 200 || r.status == 206) {
        if (out && out->digest()) digest = out->digest();
        if (at.size < 0) break;
        continue;  // checks the size it reached (a connection closed early resumes)
      }
      if (r.status == 416 && have > 0) {  // the partial file is no prefix of this one: start over
        fs::remove(partial, ec);
        continue;
      }
      if (retryable(r) && attempt < o_.retries) {
        pause_for(wait_for(r, attempt));
        continue;
      }
      fail(r, path);
    }
    std::error_code ec;
    const int64_t have = int64_t(fs::file_size(partial, ec));
    if (at.size >= 0 && have != at.size)
      throw HubError(o_.repo_id + ": " + path + " has " + std::to_string(have) + " bytes, the Hub said " + std::to_string(at.size));
    if (lfs && (digest ? *digest : sha256_of_file(partial)) != at.etag) {  // complete from an earlier run: read it
      fs::remove(partial, ec);
      throw HubError(o_.repo_id + ": " + path + ": the bytes received do not match the sha256 the Hub lists (" +
                     at.etag + "); they were not kept: download again");
    }
    return fetched;
  }

 private:
  std::vector<std::string> auth_for(const std::string& url) const {
    if (token_.empty() || url_origin(url) != url_origin(endpoint_)) return {};  // never to another host
    return {"Authorization: Bearer " + token_};
  }

  HubError certificate_refused(const CertificateError& e) const {
    return HubError(o_.repo_id + ": the server's TLS certificate was not accepted: " + e.what() +
                    "; a mirror with a certificate authority of its own needs REQUESTS_CA_BUNDLE naming that authority's "
                    "certificate");
  }

  static bool retryable(const HttpResponse& r) { return r.status == 429 || r.status >= 500; }
  static double backoff(int attempt) { return std::min(8.0, double(1 << std::min(attempt, 3))); }
  static double wait_for(const HttpResponse& r, int attempt) {
    if (r.status == 429) {
      const double after = std::atof(r.header("retry-after").c_str());
      if (after > 0) return std::min(after, 60.0);
    }
    return backoff(attempt);
  }

  HttpResponse send(const std::string& method, const std::string& url, const std::string& what) {
    std::vector<std::string> headers = auth_for(url);
    headers.push_back("Accept-Encoding: identity");
    for (int attempt = 0;; ++attempt) {
      try {
        HttpResponse r = http_.request(method, url, headers);
        if (retryable(r) && attempt < o_.retries) {
          pause_for(wait_for(r, attempt));
          continue;
        }
        return r;
      } catch (const CertificateError& e) {
        throw certificate_refused(e);
      } catch (const TransportError& e) {
        if (attempt >= o_.retries)
          throw HubError(o_.repo_id + ": " + what + ": " + e.what() + " after " + std::to_string(attempt + 1) + " tries");
        pause_for(backoff(attempt));
      }
    }
  }

  [[noreturn]] void fail(const HttpResponse& r, const std::string& path) const {
    const std::string code = r.header("x-error-code"), page = endpoint_ + "/" + prefix_ + o_.repo_id;
    const std::string repo = o_.repo_id;
    if (code == "GatedRepo")
      throw HubError(repo + " is gated: accept its conditions at " + page + " (signed in), then give that account's token "
                     "(--token, or HF_TOKEN)");
    if (r.status == 401)
      throw HubError(token_.empty() ? repo + " needs a token: it is private, or no " + kind_ + " repo has that name "
                                             "(give --token, or set HF_TOKEN)"
                                    : repo + ": the token was refused (401): check it, and that it may read this repo");
    if (r.status == 403)
      throw HubError(repo + ": access refused (403)" + (r.header("x-error-message").empty() ? std::string() : ": " + r.header("x-error-message")));
    if (r.status == 404) {
      if (code == "RevisionNotFound") throw HubError(repo + " has no revision '" + o_.revision + "' (a branch, tag or commit)");
      if (code == "EntryNotFound") throw HubError(repo + " has no file '" + path + "' at " + o_.revision);
      throw HubError("no " + kind_ + " repo '" + repo + "' on " + endpoint_ + (token_.empty() ? " (a private one needs --token)" : ""));
    }
    if (r.status == 429) throw HubError(repo + ": the Hub kept answering 429 (too many requests): try again later");
    std::string body = r.body.substr(0, r.body.find('\n'));
    if (body.size() > 200) body = body.substr(0, 200);
    throw HubError(repo + ": HTTP " + std::to_string(r.status) + (path.empty() ? std::string() : " for " + path) +
                   (body.empty() ? std::string() : ": " + body));
  }

  const DownloadOptions& o_;
  Http http_;
  std::string endpoint_, token_, kind_, prefix_;
};

// local_dir: huggingface_hub's metadata beside the files (.cache/huggingface/download/<path>.metadata:
// commit, etag, time), so either tool knows a file is current.
fs::path metadata_path(const fs::path& local, const std::string& path) {
  return local / ".cache" / "huggingface" / "download" / (path + ".metadata");
}

std::string metadata_etag(const fs::path& local, const std::string& path) {
  std::ifstream in(metadata_path(local, path));
  std::string commit, etag;
  std::getline(in, commit);
  std::getline(in, etag);
  return etag;
}

void write_metadata(const fs::path& local, const std::string& path, const std::string& commit, const std::string& etag) {
  const fs::path m = metadata_path(local, path);
  fs::create_directories(m.parent_path());
  std::ofstream(m, std::ios::trunc) << commit << "\n" << etag << "\n"
                                    << std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()
                                    << "\n";
}

}  // namespace

DownloadResult download(const DownloadOptions& o, const std::function<void(const DownloadProgress&)>& progress) {
  if (o.repo_id.empty() || o.repo_id.front() == '/' || o.repo_id.find("..") != std::string::npos ||
      std::count(o.repo_id.begin(), o.repo_id.end(), '/') > 1)
    throw HubError("'" + o.repo_id + "' is not a repo id (org/name, or name)");
  const auto start = Clock::now();
  const fs::path cache_dir = o.cache_dir.empty() ? fs::path(hub_cache_dir()) : fs::path(o.cache_dir);
  const RepoCache cache(cache_dir, o.type, o.repo_id);
  const bool local = !o.local_dir.empty();
  DownloadResult result;

  if (o.offline || hub_offline()) {
    const auto commit = local ? std::optional<std::string>("") : cache.commit_of(o.revision);
    const fs::path folder = local ? fs::path(o.local_dir) : commit ? cache.snapshot(*commit) : fs::path();
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec))
      throw HubError(o.repo_id + " at '" + o.revision + "' is not in " + (local ? o.local_dir : cache_dir.string()) +
                     " and this is offline: run `tunebench-cli download " + o.repo_id + "` where the Hub can be reached");
    result.folder = folder.string();
    result.commit = commit.value_or("");
    for (const auto& f : snapshot_files(folder))
      if (wanted(o, f)) result.files.push_back(f), result.bytes += int64_t(fs::file_size(folder / f, ec));
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  }

  Session hub(o);
  const auto [commit, files] = hub.list_files();
  if (files.empty()) throw HubError(o.repo_id + " at '" + o.revision + "' has no file that --include/--exclude let through");
  result.commit = commit;
  result.folder = local ? o.local_dir : cache.snapshot(commit).string();
  DownloadProgress p;
  p.files_total = files.size();
  for (const auto& f : files) p.bytes_total += f.size;
  const auto moved = [&](int64_t n) {  // bytes received
    p.bytes_done += n;
    p.fetched += n;
    if (progress) progress(p);
  };
  const auto present = [&](int64_t n) { p.bytes_done += n; };  // a file already here
  for (const auto& f : files) {
    config::check_interrupt();
    p.file = f.path;
    if (progress) progress(p);
    const fs::path target = local ? fs::path(o.local_dir) / f.path : cache.snapshot(commit) / f.path;
    std::error_code ec;
    const bool current = local ? fs::is_regular_file(target, ec) && metadata_etag(o.local_dir, f.path) == f.etag
                               : cache.has_file(commit, f.path);
    if (current) {
      present(f.size);
    } else if (!local && !f.etag.empty() && fs::exists(cache.blob(f.etag), ec)) {
      cache.link(commit, f.path, f.etag);  // the same bytes under another commit or name
      present(f.size);
    } else {
      const auto at = hub.locate(commit, f);
      if (local) {
        const fs::path partial = metadata_path(o.local_dir, f.path).replace_extension("." + at.etag + ".incomplete");
        fs::create_directories(partial.parent_path());
        result.fetched += hub.fetch(at, f.path, partial, moved);
        fs::create_directories(target.parent_path());
        fs::rename(partial, target);
        write_metadata(o.local_dir, f.path, commit, at.etag);
      } else {
        const FileLock lock(cache.lock_file(at.etag));  // another process may be writing this blob
        if (!fs::exists(cache.blob(at.etag), ec)) {
          fs::create_directories(cache.blob(at.etag).parent_path());
          result.fetched += hub.fetch(at, f.path, cache.incomplete(at.etag), moved);
          fs::rename(cache.incomplete(at.etag), cache.blob(at.etag));
        }
        cache.link(commit, f.path, at.etag);
      }
    }
    ++p.files_done;
    result.files.push_back(f.path);
    result.bytes += f.size;
  }
  if (!local && o.revision != commit) cache.write_ref(o.revision, commit);
  if (!local) fs::create_directories(cache.root() / "refs");  // a scan of the cache (Hugging Face's JS client) expects it
  p.bytes_done = p.bytes_total;
  if (progress) progress(p);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

DownloadPlan plan_download(const DownloadOptions& o) {
  const fs::path cache_dir = o.cache_dir.empty() ? fs::path(hub_cache_dir()) : fs::path(o.cache_dir);
  const RepoCache cache(cache_dir, o.type, o.repo_id);
  Session hub(o);
  const auto [commit, files] = hub.list_files();
  DownloadPlan plan;
  plan.commit = commit;
  plan.files = files.size();
  std::error_code ec;
  for (const auto& f : files) {
    plan.bytes += f.size;
    plan.paths.push_back(f.path);
    if (!cache.has_file(commit, f.path) && !(!f.etag.empty() && fs::exists(cache.blob(f.etag), ec))) plan.bytes_to_fetch += f.size;
    if (f.path == "config.json" && f.size < (int64_t(1) << 20)) plan.config_json = hub.read_small(commit, f);
  }
  return plan;
}

std::string progress_text(const DownloadProgress& p, double seconds) {
  std::string line = config::byte_size_text(uint64_t(std::max<int64_t>(0, p.bytes_done))) + " of " +
                     config::byte_size_text(uint64_t(p.bytes_total));
  if (p.bytes_total > 0) line += " (" + std::to_string(p.bytes_done * 100 / p.bytes_total) + "%)";
  if (seconds > 0.5 && p.fetched > 0) {
    const double rate = double(p.fetched) / seconds;
    line += ", " + config::byte_size_text(uint64_t(rate)) + "/s";
    const int64_t left = int64_t(double(std::max<int64_t>(0, p.bytes_total - p.bytes_done)) / rate);
    char eta[32];
    std::snprintf(eta, sizeof eta, "%lld:%02lld", static_cast<long long>(left / 60), static_cast<long long>(left % 60));
    line += std::string(", ") + eta + " left";
  }
  if (!p.file.empty()) line += ": " + p.file;
  return line;
}

}  // namespace tb::hub
