// What the recipe tests share: a real MetricLogger sink that keeps every step and event (and can ask
// the run to stop after a given step, as the Stop button and Ctrl-C do), one builder of the small
// configs they train, and one way to load and run a config.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "components/builtin.h"
#include "config/config.h"
#include "recipe.h"
#include "training/metrics.h"
#include "training/run_control.h"

namespace tbtest {

struct CollectingLogger : tb::training::MetricLogger {
  std::vector<tb::training::StepMetrics> steps;
  std::vector<nlohmann::json> events;
  tb::training::RunControl* control = nullptr;
  int64_t stop_after = -1;

  void log_step(const tb::training::StepMetrics& m) override {
    steps.push_back(m);
    if (control && m.step == stop_after) control->stop = true;
  }
  void log_event(const nlohmann::json& e) override { events.push_back(e); }

  std::vector<double> losses() const {
    std::vector<double> out;
    for (const auto& s : steps) out.push_back(s.loss);
    return out;
  }
  // The first info message containing `text`, or "".
  std::string info_containing(const std::string& text) const {
    for (const auto& e : events)
      if (e.value("event", "") == "info" && e.value("message", "").find(text) != std::string::npos) return e["message"];
    return {};
  }
  // The first event of a kind ("compile", "checkpoint", ...), or null.
  nlohmann::json event(const std::string& kind) const {
    for (const auto& e : events)
      if (e.value("event", "") == kind) return e;
    return {};
  }
  // Every "warning" event's message.
  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const auto& e : events)
      if (e.value("event", "") == "warning") out.push_back(e.value("message", ""));
    return out;
  }
};

// A small training config: the tiny test model on seeded random weights and synthetic token ids, the
// bundled SentencePiece tokenizer, AdamW, cross entropy, fp32, every step logged. Each field is the YAML
// text of its key; `model_args` and `extra` are more lines, under `model:` and at the top level.
struct TinyConfig {
  std::string model = "tunebench.models.llama_tiny_test";
  std::string model_args;  // e.g. "  lora_rank: 4\n"
  std::string checkpoint_dir = "null";
  std::string checkpoint_files = "[]";
  int seq_len = 24, num_samples = 12, data_seed = 3;
  int seed = 5, batch_size = 2, epochs = 2, max_steps_per_epoch = 3, gradient_accumulation_steps = 2;
  std::string optimizer_args = "  lr: 0.003\n  weight_decay: 0.01\n";
  std::string loss = "torch.nn.CrossEntropyLoss";
  std::string loss_args;
  int num_threads = 2;
  std::string extra;

  // The LoRA settings the recipe tests use: every attention projection and the MLP, rank 4, alpha 8.
  TinyConfig& lora(const std::string& component, const std::string& more = {}) {
    model = component;
    model_args =
        "  lora_attn_modules: [q_proj, k_proj, v_proj, output_proj]\n  apply_lora_to_mlp: true\n"
        "  lora_rank: 4\n  lora_alpha: 8\n" +
        more;
    return *this;
  }
  // A Hugging Face folder's architecture and weights (model.safetensors).
  TinyConfig& from_folder(const std::string& folder, const std::string& component = "tunebench.models.from_hf_config") {
    model = component;
    model_args = "  path: " + folder + "\n" + model_args;
    checkpoint_dir = folder;
    checkpoint_files = "[model.safetensors]";
    return *this;
  }

  // The run tests/reference/train_reference.py repeats in PyTorch: 8 samples of 12 synthetic tokens, seed
  // 0, two steps an epoch without accumulation, the output projection in 3 chunks, one thread.
  TinyConfig& as_train_reference(const std::string& lr) {
    seq_len = 12, num_samples = 8, data_seed = 0;
    seed = 0, max_steps_per_epoch = 2, gradient_accumulation_steps = 1;
    optimizer_args = "  lr: " + lr + "\n  weight_decay: 0.01\n";
    loss = "torchtune.modules.loss.CEWithChunkedOutputLoss";
    loss_args = "  num_output_chunks: 3\n";
    num_threads = 1;
    return *this;
  }

  std::string text(const std::string& output_dir) const {
    return "model:\n  _component_: " + model + "\n" + model_args +
           "tokenizer:\n  _component_: torchtune.models.llama2.llama2_tokenizer\n  path: " TB_SOURCE_DIR
           "/resources/tokenizer/tokenizer.model\n"
           "checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n  checkpoint_dir: " +
           checkpoint_dir + "\n  checkpoint_files: " + checkpoint_files +
           "\n  model_type: LLAMA2\n  output_dir: ${output_dir}\n"
           "dataset:\n  _component_: tunebench.datasets.synthetic\n  seq_len: " +
           std::to_string(seq_len) + "\n  num_samples: " + std::to_string(num_samples) +
           "\n  seed: " + std::to_string(data_seed) + "\nseed: " + std::to_string(seed) +
           "\nshuffle: false\nbatch_size: " + std::to_string(batch_size) + "\nepochs: " + std::to_string(epochs) +
           "\nmax_steps_per_epoch: " + std::to_string(max_steps_per_epoch) +
           "\ngradient_accumulation_steps: " + std::to_string(gradient_accumulation_steps) +
           "\noptimizer:\n  _component_: torch.optim.AdamW\n" + optimizer_args + "loss:\n  _component_: " + loss +
           "\n" + loss_args + "num_threads: " + std::to_string(num_threads) + "\ndtype: fp32\nlog_every_n_steps: 1\n" +
           extra + "output_dir: " + output_dir + "\n";
  }
};

// `text` with `overrides`, validated against the built-in components for `recipe`.
inline tb::config::LoadResult load_config(const std::string& text, const std::string& recipe,
                                          const std::vector<std::string>& overrides = {}) {
  tb::config::LoadOptions options;
  options.registry = &tb::components::builtin();
  options.overrides = overrides;
  options.recipe = recipe;
  return tb::config::load_text(text, "test.yaml", options);
}

// Loads `text` (as load_config) and runs `recipe` on it; an invalid config is a Failed result whose
// message holds the diagnostics. The logger stops the run after its stop_after step.
inline tb::training::RunResult run_recipe(const std::string& recipe, const std::string& text,
                                          const std::vector<std::string>& overrides, CollectingLogger& logger,
                                          tb::training::RunControl& control) {
  const auto loaded = load_config(text, recipe, overrides);
  if (!loaded.ok()) {
    tb::training::RunResult invalid;
    invalid.status = tb::training::RunStatus::Failed;
    invalid.message = "config invalid: " + tb::config::format_diagnostics(loaded.diagnostics);
    return invalid;
  }
  logger.control = &control;
  return tb::find_recipe(recipe)->run(*loaded.config, logger, control);
}

}  // namespace tbtest
