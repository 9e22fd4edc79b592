// Hugging Face checkpoints of every family the decoder builds: torchtune.training.FullModelHFCheckpointer.
//
// A checkpoint folder holds config.json, model.safetensors or model-0000k-of-0000n.safetensors with
// model.safetensors.index.json, under Hugging Face key names. Loading converts to our names and
// rotary layout (hf_convert.h); saving writes the same layout back, so a folder we save loads in
// Hugging Face transformers unchanged and load -> save gives bitwise-equal tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "checkpoint/atomic_file.h"
#include "checkpoint/checkpoint_files.h"  // resolve_checkpoint_files: which files load
#include "checkpoint/hf_convert.h"
#include "checkpoint/lazy_state.h"
#include "models/model_args.h"
#include "models/transformer.h"

namespace tb::checkpoint {

constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;  // Hugging Face's default "5GB"

// The tensors of those files under Hugging Face names (views of the mapped files). A key found in
// two files is an error.
StateDict load_hf_state(const std::string& dir, const std::vector<std::string>& files);

// The same under our names and rotary layout. `args`: the architecture the weights were written for
// (the folder's config.json); it decides the q/k permutation.
StateDict load_model_state(const std::string& dir, const std::vector<std::string>& files,
                           const models::ModelArgs& args);

// Writes `state` (our names) into `folder` (created if needed) as config.json (hf_config),
// model-0000k-of-0000n.safetensors (a new shard starts before one would pass max_shard_bytes) and
// model.safetensors.index.json. Tied models (hf_config tie_word_embeddings) get no lm_head. Every
// file is written atomically; stale model-*-of-*.safetensors shards of an earlier save are removed.
void save_model_state(const std::string& folder, const StateDict& state, const nlohmann::json& hf_config,
                      uint64_t max_shard_bytes = kDefaultMaxShardBytes);
// The same for tensors made one at a time as the shards are written (checkpoint/lazy_state.h).
void save_model_state(const std::string& folder, const LazyStateDict& state, const nlohmann::json& hf_config,
                      uint64_t max_shard_bytes = kDefaultMaxShardBytes);

// The base parameters of a model under our names (`_orig_mod.` prefixes stripped), detached, sharing storage.
StateDict base_model_state(const torch::nn::Module& model);

// Copies `state` into the model's base parameters (converting dtype). Every base parameter must be
// present with its shape; extra keys are errors. Messages name the tensor (ours and Hugging Face's),
// both shapes and `source`. Parameters that are not base weights (adapters) are left untouched.
void copy_into_model(torch::nn::Module& model, const StateDict& state, const std::string& source);


struct HFCheckpointerOptions {
  std::optional<std::string> checkpoint_dir;  // nullopt: seeded random weights
  std::vector<std::string> checkpoint_files;  // empty: see resolve_checkpoint_files
  std::string model_type = "LLAMA2";          // torchtune's names (hf_config.h model_type_names()); the
                                              // family in the folder's config.json wins, with a warning
  std::string output_dir;
  std::optional<std::string> adapter_checkpoint;
  std::optional<std::string> recipe_checkpoint;
  bool resume_from_checkpoint = false;
  bool safe_serialization = true;  // false (PyTorch .bin) is refused
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
};

struct LoadReport {
  bool random_init = false;
  std::string message;                // one line for the log: where the weights came from
  std::vector<std::string> warnings;  // e.g. the preset's rope_base differs from config.json's
};

// Product type of the `torchtune.training.FullModelHFCheckpointer` component:
//   std::shared_ptr<tb::checkpoint::FullModelHFCheckpointer>
class FullModelHFCheckpointer {
 public:
  explicit FullModelHFCheckpointer(HFCheckpointerOptions options);  // throws std::invalid_argument
  const HFCheckpointerOptions& options() const { return options_; }
  bool has_checkpoint() const { return options_.checkpoint_dir.has_value(); }
  // The architecture in checkpoint_dir/config.json; nullopt without checkpoint_dir or config.json.
  std::optional<models::ModelArgs> checkpoint_args() const;
  // Our names; `model_args` stands in when the folder has no config.json.
  StateDict load_model_state(const models::ModelArgs& model_args) const;

  // Fills the model from the checkpoint, or with init_weights(seed) when checkpoint_dir is null.
  LoadReport load_into(models::TransformerDecoderImpl& model, uint64_t seed) const;
  LoadReport load_into(torch::nn::Module& model, const models::ModelArgs& args, uint64_t seed) const;

  // Saves the model's base weights into `folder` (relative: under output_dir) with the source
  // config.json (torch_dtype set to the weights' dtype) or one made from `args`. Returns the folder.
  std::string save(const std::string& folder, const models::TransformerDecoderImpl& model) const;
  std::string save(const std::string& folder, const torch::nn::Module& model, const models::ModelArgs& args) const;
  // The same for weights given under our names (e.g. a LoRA model's merged weights).
  std::string save_state(const std::string& folder, const StateDict& state, const models::ModelArgs& args) const;
  std::string save_state(const std::string& folder, const LazyStateDict& state, const models::ModelArgs& args) const;

 private:
  HFCheckpointerOptions options_;
};

}  // namespace tb::checkpoint
