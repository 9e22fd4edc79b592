#include "components/hub_datasets.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/hub_dataset_layout.h"
#include "data/row_sources.h"
#include "hub/cache.h"

namespace fs = std::filesystem;

namespace tb::components {

namespace {

const char* const kConvertedRevision = "refs/convert/parquet";

std::string format_source(data::DataFormat f) {
  switch (f) {
    case data::DataFormat::Parquet: return "parquet";
    case data::DataFormat::Json: return "json";
    case data::DataFormat::Csv: return "csv";
    case data::DataFormat::Text: return "text";
  }
  return "json";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

hub::DownloadOptions revision_options(const std::string& repo, const std::string& revision) {
  hub::DownloadOptions o;
  o.repo_id = repo;
  o.type = hub::RepoType::Dataset;
  o.revision = revision;
  return o;
}

// The Hub's Parquet copy of a script dataset keeps each config in a folder of its own.
std::vector<std::string> config_dirs(const std::vector<std::string>& paths) {
  std::vector<std::string> dirs;
  for (const auto& p : paths)
    if (const auto slash = p.find('/'); slash != std::string::npos) dirs.push_back(p.substr(0, slash));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

// The config folder to read: `name:`, else the only one (or "default").
std::string converted_config_dir(const std::string& repo, const std::vector<std::string>& paths, const std::string& name) {
  const std::vector<std::string> dirs = config_dirs(paths);
  if (!name.empty()) {
    if (std::find(dirs.begin(), dirs.end(), name) != dirs.end()) return name;
  } else if (dirs.size() == 1) {
    return dirs[0];
  } else if (std::find(dirs.begin(), dirs.end(), "default") != dirs.end()) {
    return "default";
  }
  std::string list;
  for (const auto& d : dirs) list += (list.empty() ? "" : ", ") + d;
  throw std::invalid_argument(repo + (name.empty() ? ": name: which config? Its Parquet copy holds " : ": no config '" + name + "' in its Parquet copy (configs: ") +
                              list + (name.empty() ? "" : ")"));
}

// A revision of a dataset repo as far as choosing its files needs: its file list and its card. Offline from
// the cached snapshot refs/<revision> names; online the Hub's file list, then the card (fetched alone).
struct Listing {
  std::string commit;
  fs::path snapshot;  // offline: the cached snapshot, which holds the files; online: empty
  std::vector<std::string> paths;
  std::string readme;
};

Listing list_revision(const std::string& repo, const std::string& revision) {
  Listing l;
  if (hub::hub_offline()) {
    const hub::RepoCache cache(hub::hub_cache_dir(), hub::RepoType::Dataset, repo);
    const auto commit = cache.commit_of(revision);
    std::error_code ec;
    if (!commit || !fs::is_directory(cache.snapshot(*commit), ec))
      throw hub::HubError("dataset " + repo + " is not in the cache (" + hub::hub_cache_dir() +
                          ") and this is offline: run `tunebench-cli download " + repo + " --repo-type dataset` where the Hub can be reached");
    l.commit = *commit;
    l.snapshot = cache.snapshot(*commit);
    l.paths = hub::snapshot_files(l.snapshot);
    if (fs::exists(l.snapshot / "README.md")) l.readme = read_text(l.snapshot / "README.md");
    return l;
  }
  hub::DownloadOptions o = revision_options(repo, revision);
  const hub::DownloadPlan plan = hub::plan_download(o);
  l.commit = plan.commit;
  l.paths = plan.paths;
  if (std::find(l.paths.begin(), l.paths.end(), "README.md") != l.paths.end()) {
    o.include = {"README.md"};
    l.readme = read_text(fs::path(hub::download(o).folder) / "README.md");
  }
  return l;
}

struct Located {
  fs::path snapshot;
  data::ResolvedSplit split;
};

// The split's files in the cache: offline the snapshot's; online fetched (a file already cached is not
// fetched again).
Located locate(const HubDatasetRequest& r, const std::string& revision, const HubProgress& progress) {
  const Listing l = list_revision(r.repo, revision);
  Located at;
  at.split = data::resolve_dataset_split(r.repo, l.paths, l.readme, r.config_name, r.split, r.data_dir, r.data_files);
  if (!l.snapshot.empty()) {
    at.snapshot = l.snapshot;
    return at;
  }
  hub::DownloadOptions o = revision_options(r.repo, revision);
  o.include = at.split.files;
  at.snapshot = hub::download(o, [&](const hub::DownloadProgress& p) {
                  if (progress) progress(r.repo, p);
                }).folder;
  return at;
}

Located locate_any(const HubDatasetRequest& r, const HubProgress& progress) {
  try {
    return locate(r, "main", progress);
  } catch (const std::invalid_argument& e) {
    // A dataset defined by a loading script: the Hub's Parquet conversion is what can be read.
    const std::string what = e.what();
    if (what.find("loading script") == std::string::npos) throw;
    HubDatasetRequest converted = r;
    std::vector<std::string> paths;
    try {
      paths = list_revision(r.repo, kConvertedRevision).paths;
    } catch (const hub::HubError&) {
      if (!hub::hub_offline()) throw;
      throw hub::HubError(what + ", which is not in the cache and this is offline");
    }
    converted.data_dir = converted_config_dir(r.repo, paths, r.config_name);
    converted.config_name.clear();
    return locate(converted, kConvertedRevision, progress);
  }
}

}  // namespace

bool is_local_format(const std::string& source) {
  return source == "json" || source == "csv" || source == "text" || source == "parquet";
}

std::unique_ptr<data::RowStream> open_hub_dataset(const HubDatasetRequest& request, std::optional<char> delimiter,
                                                  const std::string& field, const HubProgress& progress,
                                                  const std::vector<std::string>& columns) {
  const Located at = locate_any(request, progress);
  std::vector<std::string> files;
  for (const auto& f : at.split.files) files.push_back((at.snapshot / f).string());
  const std::string source = format_source(at.split.format);
  return data::open_rows(source, files, delimiter, source == "json" ? field : std::string(), columns);
}

HubDatasetInfo inspect_hub_dataset(const HubDatasetRequest& request) {
  HubDatasetInfo info;
  std::string revision = "main", config_name = request.config_name, data_dir = request.data_dir;
  Listing l = list_revision(request.repo, revision);
  info.configs = data::dataset_config_names(l.readme);
  try {
    info.splits = data::dataset_splits(request.repo, l.paths, l.readme, config_name, data_dir, request.data_files);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("loading script") == std::string::npos) throw;
    // A script dataset: what the Hub's Parquet copy holds, a folder a config.
    revision = kConvertedRevision;
    info.converted = true;
    l = list_revision(request.repo, revision);
    info.configs = config_dirs(l.paths);
    data_dir = converted_config_dir(request.repo, l.paths, config_name);
    config_name.clear();
    info.splits = data::dataset_splits(request.repo, l.paths, l.readme, config_name, data_dir, request.data_files);
  }
  info.commit = l.commit;
  const auto split = data::resolve_dataset_split(request.repo, l.paths, l.readme, config_name, request.split, data_dir,
                                                 request.data_files);
  info.files = split.files;
  if (!l.snapshot.empty()) {
    std::error_code ec;
    for (const auto& f : split.files) info.bytes += int64_t(fs::file_size(l.snapshot / f, ec));
  } else {
    hub::DownloadOptions o = revision_options(request.repo, revision);
    o.include = split.files;
    const hub::DownloadPlan plan = hub::plan_download(o);
    info.bytes = plan.bytes;
    info.bytes_to_fetch = plan.bytes_to_fetch;
  }
  return info;
}

void fetch_config_datasets(const config::Config& cfg, const HubProgress& progress) {
  const YAML::Node dataset = cfg.at("dataset");
  std::vector<YAML::Node> nodes;
  if (dataset.IsMap()) nodes.push_back(dataset);
  if (dataset.IsSequence())
    for (const auto& d : dataset) nodes.push_back(d);
  for (const auto& d : nodes) {
    if (!d.IsMap() || !d["source"] || !d["source"].IsScalar() || is_local_format(d["source"].Scalar())) continue;
    HubDatasetRequest r;
    r.repo = d["source"].Scalar();
    if (d["name"] && d["name"].IsScalar()) r.config_name = d["name"].Scalar();
    if (d["data_dir"] && d["data_dir"].IsScalar()) r.data_dir = d["data_dir"].Scalar();
    if (d["data_files"] && d["data_files"].IsScalar()) r.data_files = {d["data_files"].Scalar()};
    if (d["data_files"] && d["data_files"].IsSequence())
      for (const auto& f : d["data_files"]) r.data_files.push_back(f.Scalar());
    const std::string split = d["split"] && d["split"].IsScalar() ? d["split"].Scalar() : "train";
    for (const auto& part : data::parse_split(split).parts) {
      r.split = part.split;
      locate_any(r, progress);
    }
  }
}

}  // namespace tb::components
