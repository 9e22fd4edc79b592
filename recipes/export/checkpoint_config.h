// `export gguf --checkpoint DIR`: a checkpoint Tunebench wrote exports with nothing else to say. Its
// manifest holds the resolved config it was trained with; that config is pointed at the folder:
//   - the folder holds the model's weights (a full fine-tune, or a LoRA run's merged weights):
//     checkpointer.checkpoint_dir = the folder, adapter_checkpoint = null (merged already);
//   - it holds only an adapter (save_adapter_weights_only): the base stays the config's checkpoint_dir
//     and adapter_checkpoint = the folder, merged at export;
//   - `adapter` (export the adapter alone): adapter_checkpoint = the folder in either case.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace tb::exporting {

// Throws std::runtime_error naming the folder when it is not a complete Tunebench checkpoint (no
// manifest, no config in it, neither weights nor adapter); config errors come back as diagnostics.
config::LoadResult load_checkpoint_config(const std::string& checkpoint_dir, bool adapter,
                                          const std::vector<std::string>& overrides = {});

// The model the checkpoint's run started from: the manifest's config as it was trained, without the
// checkpoint's weights or adapter (the window's Chat tab sets it beside the fine-tuned one). Throws as above.
config::LoadResult load_checkpoint_base_config(const std::string& checkpoint_dir);

}  // namespace tb::exporting
