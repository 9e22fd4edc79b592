// Fetch on demand: the model folders a config names by Hub repo id (model.path, the tokenizer's path,
// checkpointer.checkpoint_dir; repo_path.h) that are neither folders here nor in the shared cache are
// downloaded before `run`, `eval`, `generate`, `export` or the window build anything. Only the files
// Tunebench reads come down (kFetchExclude: not PyTorch pickles, GGUF, ONNX or other frameworks' weights).
// Offline ($HF_HUB_OFFLINE), a missing one fails naming the `download` command to run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "hub/download.h"

namespace tb::hub {

// What a fetch on demand leaves out (huggingface_hub's patterns): weights Tunebench does not read.
extern const std::vector<std::string> kFetchExclude;

struct MissingRepo {
  std::string key;       // the config key that names it: "model.path"
  std::string value;     // as the config says it: "Qwen/Qwen3-0.6B@main"
  std::string repo_id;   // org/name
  std::string revision;  // "main" unless the value said @revision
};

// The repo ids `cfg` names that must be fetched, each once, in the order above.
std::vector<MissingRepo> missing_repos(const config::Config& cfg);

// Downloads each of missing_repos(cfg) into the cache; `progress` hears each repo's progress. A stop
// (config/interrupt.h) ends it with the partial file kept. Throws HubError (offline: naming the command).
void fetch_missing_repos(const config::Config& cfg,
                         const std::function<void(const MissingRepo&, const DownloadProgress&)>& progress = {});

}  // namespace tb::hub
