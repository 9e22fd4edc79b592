// The model and dataset repos already in the shared Hugging Face cache (cache.h) that Tunebench can open: a
// model's snapshot holding a config.json, whoever downloaded it (Tunebench, transformers, huggingface-cli,
// vLLM, datasets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb::hub {

struct CachedModel {
  std::string repo_id;  // org/name
  std::string commit;
  std::string folder;   // snapshots/<commit>
  int64_t bytes = 0;    // its files' size on disk
};

// Per repo, the snapshot refs/main names (else the newest one); sorted by repo id. `cache_dir` empty:
// hub_cache_dir(). A cache that is not there gives none.
std::vector<CachedModel> cached_models(const std::string& cache_dir = {});

// The dataset repos in the cache, likewise (any snapshot: a dataset's snapshot may hold only the files a
// config and split read). `bytes`: what that snapshot holds.
std::vector<CachedModel> cached_datasets(const std::string& cache_dir = {});

// "org/name" when `folder` is a model snapshot of a Hugging Face cache (.../models--org--name/snapshots/<commit>),
// else "".
std::string snapshot_repo_id(const std::string& folder);

}  // namespace tb::hub
