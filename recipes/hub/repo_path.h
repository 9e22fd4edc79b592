// A model folder named by its Hub repo id wherever a config names a model folder (model.path,
// checkpointer.checkpoint_dir, the tokenizer's path): "Qwen/Qwen3-0.6B", or "Qwen/Qwen3-0.6B@v1.0" for a
// branch, tag or commit, is the snapshot `tunebench-cli download` (or any Hugging Face tool) put in the
// shared cache (cache.h). Nothing is fetched here: a repo id not in the cache says which download to run.
#pragma once

#include <string>

namespace tb::hub {

// "org/name" or "org/name@revision" (names of letters, digits, '-', '_', '.').
bool looks_like_repo_id(const std::string& text);

// config::resolve_input_path(path) when that names something that exists; else, for a repo id, its
// cached snapshot folder. A repo id that is not in the cache throws std::runtime_error naming the download
// to run when `required` (a folder read now: model.path, the tokenizer's); else it comes back as
// resolve_input_path gives it (a folder only recorded now, whose reader says what is missing).
std::string resolve_model_path(const std::string& path, bool required = true);

}  // namespace tb::hub
