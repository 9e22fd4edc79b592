#include "hub/fetch_models.h"

#include <filesystem>

#include "hub/repo_path.h"

namespace fs = std::filesystem;

namespace tb::hub {

const std::vector<std::string> kFetchExclude = {
    "*.bin", "*.pt", "*.pth", "*.ckpt", "*.gguf", "*.onnx", "*.onnx_data", "*.h5", "*.msgpack", "*.ot", "*.tflite",
    "*.mlmodel", "*.mlpackage/*", "onnx/*", "openvino/*", "coreml/*"};

std::vector<MissingRepo> missing_repos(const config::Config& cfg) {
  std::vector<MissingRepo> out;
  for (const char* key : {"model.path", "tokenizer.path", "checkpointer.checkpoint_dir"}) {
    const YAML::Node node = cfg.at(key);
    if (!node.IsDefined() || !node.IsScalar()) continue;
    const std::string value = node.Scalar();
    if (!looks_like_repo_id(value)) continue;
    std::error_code ec;
    if (fs::exists(config::resolve_input_path(value), ec)) continue;  // a folder of that name wins
    if (resolve_model_path(value, false) != config::resolve_input_path(value)) continue;  // cached
    const auto at = value.find('@');
    MissingRepo repo{key, value, value.substr(0, at), at == std::string::npos ? "main" : value.substr(at + 1)};
    bool seen = false;
    for (const auto& r : out) seen = seen || (r.repo_id == repo.repo_id && r.revision == repo.revision);
    if (!seen) out.push_back(std::move(repo));
  }
  return out;
}

void fetch_missing_repos(const config::Config& cfg, const std::function<void(const MissingRepo&, const DownloadProgress&)>& progress) {
  for (const auto& repo : missing_repos(cfg)) {
    DownloadOptions o;
    o.repo_id = repo.repo_id;
    o.revision = repo.revision;
    o.exclude = kFetchExclude;
    try {
      download(o, [&](const DownloadProgress& p) {
        if (progress) progress(repo, p);
      });
    } catch (const HubError& e) {
      // It may have been meant as a folder here (a typo, or another working folder): say both.
      throw HubError(repo.key + ": '" + repo.value + "' is no folder here; as a Hub repo id: " + e.what());
    }
  }
}

}  // namespace tb::hub
