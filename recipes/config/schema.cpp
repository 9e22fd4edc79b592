// The recipe config schema, one row per top-level key. Keys are torchtune's, so a torchtune
// single-device YAML validates with local paths unchanged. "no effect" rows are accepted with a
// checked value because torchtune's configs carry them, but nothing here acts on them.
#include "config/schema.h"

#include <algorithm>
#include <thread>

namespace tb::config {
namespace {

enum Need { kOptional, kRequired };

// Row builders: short enough that the table below reads as a table.
KeySpec component(const char* name, const char* kind, Need need, const char* help) {
  KeySpec k;
  k.value = ArgSpec{name, ArgType::Any, need == kRequired, need != kRequired, "", help};
  k.component_kind = kind;
  return k;
}

KeySpec value(const char* name, ArgType type, Need need, const char* default_yaml, const char* help) {
  KeySpec k;
  k.value = ArgSpec{name, type, need == kRequired, false, default_yaml, help};
  return k;
}

KeySpec nullable(KeySpec k) {
  k.value.nullable = true;
  return k;
}
KeySpec at_least(KeySpec k, int64_t min) {
  k.min_value = min;
  return k;
}
KeySpec one_of(KeySpec k, std::vector<std::string> choices) {
  k.value.choices = std::move(choices);
  return k;
}
KeySpec only_for(KeySpec k, std::vector<std::string> recipes) {
  k.recipes = std::move(recipes);
  return k;
}
KeySpec no_effect(KeySpec k) {
  k.effect = Effect::NoEffect;
  return k;
}
KeySpec training_only(KeySpec k) {
  k.training_only = true;
  return k;
}
KeySpec list_ok(KeySpec k) {
  k.list_of_components = true;
  return k;
}

std::string hardware_threads() { return std::to_string(std::max(1u, std::thread::hardware_concurrency())); }

std::vector<KeySpec> build_schema() {
  using T = ArgType;
  std::vector<KeySpec> keys = {
      // ---- components --------------------------------------------------------------------------------------
      //        key               kind             need
      component("model",          "model",         kRequired, "the model builder, e.g. torchtune.models.llama2.lora_llama2_7b"),
      component("tokenizer",      "tokenizer",     kRequired, "the tokenizer and its files"),
      component("checkpointer",   "checkpointer",  kRequired, "where weights are read from and saved to"),
      list_ok(component("dataset", "dataset",      kRequired, "the training data (a list of datasets is concatenated)")),
      training_only(component("optimizer", "optimizer", kRequired, "e.g. torch.optim.AdamW with lr, weight_decay")),
      component("lr_scheduler",   "lr_scheduler",  kOptional, "learning-rate schedule; none keeps lr constant"),
      training_only(component("loss", "loss",      kRequired, "e.g. torchtune.modules.loss.CEWithChunkedOutputLoss")),
      component("metric_logger",  "metric_logger", kOptional, "DiskLogger (default) or StdoutLogger; metrics.jsonl is always written"),
      no_effect(component("profiler", "profiler",  kOptional, "torchtune.training.setup_torch_profiler; accepted, no effect")),

      // ---- run shape ---------------------------------------------------------------------------------------
      //              key                           type      need       default
      nullable(value("seed",                         T::Int,   kOptional, "null",  "random seed; null picks one")),
      value(         "shuffle",                      T::Bool,  kOptional, "true",  "shuffle the dataset each epoch"),
      at_least(value("batch_size",                   T::Int,   kRequired, "",      "samples per micro-batch"), 1),
      training_only(at_least(value("epochs",         T::Int,   kRequired, "",      "passes over the dataset"), 1)),
      nullable(at_least(value("max_steps_per_epoch", T::Int,   kOptional, "null",  "cap on optimizer steps per epoch; 0 saves without training"), 0)),
      at_least(value("gradient_accumulation_steps",  T::Int,   kOptional, "1",     "micro-batches per optimizer step"), 1),
      nullable(value("clip_grad_norm",               T::Float, kOptional, "null",  "max gradient norm; null = no clipping")),

      // ---- how it runs -------------------------------------------------------------------------------------
      value(         "compile",                      T::Bool,  kOptional, "false", "compile the training step (torch.compile)"),
      value(         "device",                       T::String,kOptional, "cpu",   "device to train on"),
      one_of(value(  "dtype",                        T::String,kOptional, "fp32",  "parameter and compute precision"), {"fp32", "bf16"}),
      value(         "enable_activation_checkpointing", T::Bool, kOptional, "false", "recompute activations in backward"),
      no_effect(value("enable_activation_offloading", T::Bool, kOptional, "false", "accepted, no effect (CPU only)")),
      no_effect(value("optimizer_in_bwd",            T::Bool,  kOptional, "false", "accepted, no effect (optimizer steps after backward)")),
      nullable(at_least(value("num_threads",         T::Int,   kOptional, "",      "intra-op threads; default: the number of cores"), 1)),

      // ---- logging and checkpoints -------------------------------------------------------------------------
      at_least(value("log_every_n_steps",            T::Int,   kOptional, "1",     "log metrics every n optimizer steps"), 1),
      value(         "log_peak_memory_stats",        T::Bool,  kOptional, "false", "report peak memory per step"),
      value(         "output_dir",                   T::Path,  kRequired, "",      "checkpoints and logs/metrics.jsonl go here"),
      value(         "resume_from_checkpoint",       T::Bool,  kOptional, "false", "continue from the checkpoint in checkpointer.checkpoint_dir"),
      nullable(at_least(value("save_every_n_steps",  T::Int,   kOptional, "null",  "also checkpoint every n steps; 0 or null = at epoch ends only"), 0)),
      only_for(value("save_adapter_weights_only",    T::Bool,  kOptional, "false", "save only the LoRA adapter"), {kLoraFinetuneRecipe}),
  };
  for (KeySpec& k : keys)
    if (k.value.name == "num_threads") k.computed_default = hardware_threads;
  return keys;
}

}  // namespace

bool KeySpec::applies_to(const std::string& recipe) const {
  if (recipes.empty() || recipe.empty()) return true;
  return std::find(recipes.begin(), recipes.end(), recipe) != recipes.end();
}

bool KeySpec::required_for(const std::string& recipe) const {
  return value.required && applies_to(recipe) && !(training_only && recipe == kInferenceVerbs);
}

const std::vector<KeySpec>& recipe_schema() {
  static const std::vector<KeySpec> schema = build_schema();
  return schema;
}

const KeySpec* find_key(const std::string& name) {
  for (const KeySpec& k : recipe_schema())
    if (k.value.name == name) return &k;
  return nullptr;
}

std::vector<std::string> schema_recipes() { return {kFullFinetuneRecipe, kLoraFinetuneRecipe}; }

}  // namespace tb::config
