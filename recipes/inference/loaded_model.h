// The model, its weights and the tokenizer of a config, built as the recipes build them, for
// inference (eval, generate, export): grad off, eval mode, in the config's dtype. A LoRA model gets the
// adapter of checkpointer.adapter_checkpoint when one is set.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "config/config.h"
#include "data/tokenizer.h"
#include "models/transformer.h"

namespace tb::inference {

struct LoadedModel {
  models::TransformerDecoder model{nullptr};
  std::shared_ptr<data::Tokenizer> tokenizer;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::string weights;  // one line: where the weights came from
  std::optional<std::string> checkpoint_dir;  // the checkpointer's folder; nullopt: seeded random weights
  std::string adapter_dir;  // checkpointer.adapter_checkpoint's folder, loaded into a LoRA model; empty if none
  std::vector<std::string> warnings;  // the checkpointer's (e.g. lm_head copied from the embedding)
};

// Throws std::runtime_error with a one-line reason.
LoadedModel load_model(const config::Config& cfg);

}  // namespace tb::inference
