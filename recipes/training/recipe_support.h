// Pieces the single-device recipes share, kept small so each recipe file still reads top to bottom:
// runtime settings, the token-summed loss (plain or chunked), activation checkpointing, and the
// recipe_state.* files that let a resumed run continue exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/config.h"
#include "data/dataloader.h"
#include "models/transformer.h"
#include "training/optim.h"

namespace tb::training {

// Sets the intra-op thread count (`num_threads`, default: all cores), grad mode and the seed on
// the calling thread (these are per thread) and checks `device`. Returns the compute dtype (`dtype`).
// Throws std::runtime_error with a one-line reason for values we cannot honour.
torch::ScalarType apply_runtime_settings(const config::Config& cfg);

// Sum over unmasked positions of the next-token cross entropy. The output projection runs on
// `spec.num_output_chunks` slices of the sequence at a time (CEWithChunkedOutputLoss), so only one
// slice of logits is alive at a time in the forward pass.
torch::Tensor token_loss_sum(models::TransformerDecoderImpl& model, const torch::Tensor& hidden,
                             const torch::Tensor& labels, const LossSpec& spec);

// forward_hidden with per-layer recomputation in backward (enable_activation_checkpointing): each
// decoder layer keeps only its input; its activations are recomputed, with the same RNG state, when
// the gradient reaches it. Gradients equal those of model.forward_hidden.
torch::Tensor checkpointed_forward_hidden(models::TransformerDecoderImpl& model, const torch::Tensor& tokens,
                                          const torch::Tensor& input_pos = {});

// Everything besides the weights that a resumed run needs.
struct RecipeState {
  int64_t global_step = 0;     // optimizer steps done
  int64_t epochs_run = 0;      // completed epochs
  data::DataCursor cursor;     // next batch to read
  uint64_t seed = 0;
  int64_t total_steps = 0;
};

// Writes recipe_state.json (counters) and recipe_state.pt (optimizer state, RNG state) into folder.
void save_recipe_state(const std::string& folder, const RecipeState& state, torch::optim::Optimizer& optimizer);
// Reads them back into `optimizer` and the global CPU generator; throws naming the missing file.
RecipeState load_recipe_state(const std::string& folder, torch::optim::Optimizer& optimizer);

// "2026-12-02T15:04:05Z"
std::string utc_timestamp();

// The manifest of a checkpoint folder (DESIGN.md): step, epoch, loss (null when not finite), recipe,
// compile, dtype, time and the resolved config.
nlohmann::json checkpoint_manifest(const config::Config& cfg, const std::string& recipe, int64_t step,
                                   int64_t epochs_run, double loss, torch::ScalarType dtype);

// Where resume_from_checkpoint resumes: checkpoint_dir when it is a checkpoint of ours (it has a
// manifest), else the newest complete checkpoint under output_dir. Throws when there is none.
std::string find_resume_folder(const std::optional<std::string>& checkpoint_dir, const std::string& output_dir);

// What the weights, gradients and optimizer states of a run take, before it starts: an "info" event
// whose message is the readable line and whose "memory" object holds the bytes (frozen_bytes,
// trainable_bytes, gradient_bytes, optimizer_bytes, and the element counts), for the bench and the GUI.
nlohmann::json memory_budget_event(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<torch::Tensor>& trainable);

// A component key of the config that is set (a map with _component_). yaml-cpp throws when asked the
// type of an absent node, so this asks whether it exists first.
bool has_component(const config::Config& cfg, const std::string& key);

}  // namespace tb::training
