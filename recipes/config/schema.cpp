// The recipe config schema, one row per top-level key. Keys are torchtune's, so a torchtune
// single-device YAML validates with local paths unchanged. "no effect" rows are accepted with a
// checked value because torchtune's configs carry them, but nothing here acts on them.
#include "config/schema.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "config/scalar.h"

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

// Every core, shared among the workers of a multi-process run on this machine (torchrun's
// LOCAL_WORLD_SIZE, else WORLD_SIZE): each worker's default is its part.
int machine_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string hardware_threads() {
  int workers = 1;
  for (const char* name : {"LOCAL_WORLD_SIZE", "WORLD_SIZE"})
    if (const char* text = std::getenv(name); text && *text) {
      workers = std::max(1, std::atoi(text));
      break;
    }
  return std::to_string(std::max(1, machine_cores() / workers));
}

std::vector<KeySpec> build_schema() {
  using T = ArgType;
  const std::vector<std::string> kDistributed = {kFullDistributedRecipe, kLoraDistributedRecipe};
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
      component("metric_logger",  "metric_logger", kOptional, "DiskLogger (default), StdoutLogger or TensorBoardLogger; metrics.jsonl is always written"),
      component("profiler",       "profiler",      kOptional, "torchtune.training.setup_torch_profiler: a Chrome trace of the scheduled steps"),

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
      value(         "optimizer_in_bwd",             T::Bool,  kOptional, "false", "step each parameter as soon as its gradient is ready in backward and free that gradient, so the gradients never exist all at once; needs gradient_accumulation_steps: 1 and no clip_grad_norm (a multi-process run steps after the sums instead)"),
      value("low_cpu_ram",                           T::Bool,  kOptional, "false", "torchtune: QLoRA saves through a memory map to spare RAM; here every save makes the merged weights one tensor at a time, so true and false both get that"),
      one_of(value(  "collate_fn",                   T::String,kOptional, "",      "how samples become a batch: torchtune.data.padded_collate_sft (padded, labels -100)"),
             {"torchtune.data.padded_collate_sft", "padded_collate_sft"}),
      nullable(at_least(value("num_threads",         T::Int,   kOptional, "",      "intra-op threads; default: the number of cores (divided among the workers of a multi-process run)"), 1)),

      // ---- logging and checkpoints -------------------------------------------------------------------------
      at_least(value("log_every_n_steps",            T::Int,   kOptional, "1",     "log metrics every n optimizer steps"), 1),
      value(         "log_peak_memory_stats",        T::Bool,  kOptional, "false", "report peak memory per step"),
      one_of(value(  "log_level",                    T::String,kOptional, "INFO",  "what the run prints: DEBUG, INFO all; WARNING warnings and the end; ERROR errors"),
             {"DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL"}),
      value(         "output_dir",                   T::Path,  kRequired, "",      "checkpoints and logs/metrics.jsonl go here"),
      value(         "resume_from_checkpoint",       T::Bool,  kOptional, "false", "continue from the checkpoint in checkpointer.checkpoint_dir"),
      value(         "overwrite_output_dir",         T::Bool,  kOptional, "false", "start afresh in an output_dir that holds another run's checkpoints: they and its log are deleted"),
      nullable(at_least(value("save_every_n_steps",  T::Int,   kOptional, "null",  "also checkpoint every n steps; 0 or null = at epoch ends only"), 0)),
      only_for(value("save_adapter_weights_only",    T::Bool,  kOptional, "false", "save only the LoRA adapter"), {kLoraFinetuneRecipe, kLoraDistributedRecipe}),

      // ---- torchtune's distributed configs (FSDP): data parallel here replicates the model on each rank ----
      only_for(no_effect(value("fsdp_cpu_offload",   T::Bool,  kOptional, "false", "accepted, no effect (data parallel: every rank holds the model)")), kDistributed),
      only_for(no_effect(value("fsdp_reshard_after_forward", T::Bool, kOptional, "true", "accepted, no effect (data parallel: nothing is sharded)")), kDistributed),
      only_for(no_effect(value("custom_sharded_layers", T::StringList, kOptional, "", "accepted, no effect (data parallel: nothing is sharded)")), kDistributed),
  };
  for (KeySpec& k : keys)
    if (k.value.name == "num_threads") k.computed_default = hardware_threads;
  return keys;
}

}  // namespace

WorkerThreads worker_threads(int64_t asked, int workers) {
  const int cores = machine_cores();
  workers = std::max(1, workers);
  if (asked >= 1 && asked * workers <= cores) return {asked, {}};
  const int64_t each = std::max(1, cores / workers);
  return {each, std::to_string(workers) + " processes on " + std::to_string(cores) + " cores: " + std::to_string(each) +
                    " thread" + (each == 1 ? "" : "s") + " each (num_threads " + std::to_string(asked) +
                    " would give the cores " + std::to_string(asked * workers) + " threads, which only wait on each other)"};
}

bool KeySpec::applies_to(const std::string& recipe) const {
  if (recipes.empty() || recipe.empty() || recipe == kExportVerb) return true;  // export reads any recipe's config
  return std::find(recipes.begin(), recipes.end(), recipe) != recipes.end();
}

bool KeySpec::required_for(const std::string& recipe) const {
  if (recipe == kExportVerb)
    return value.required && (component_kind == "model" || component_kind == "tokenizer" ||
                              component_kind == "checkpointer" || value.name == "output_dir");
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

std::vector<std::string> schema_recipes() {
  return {kFullFinetuneRecipe, kLoraFinetuneRecipe, kFullDistributedRecipe, kLoraDistributedRecipe};
}

namespace {

// The scalar text in effect for `key`; nullopt when it is null.
std::optional<std::string> setting_text(const Config& cfg, const std::string& key, const char* type) {
  const KeySpec* spec = find_key(key);
  if (!spec || !spec->component_kind.empty()) throw std::logic_error("'" + key + "' is not a setting of the schema");
  const YAML::Node node = cfg.at(key);
  if (node.IsDefined() && node.IsScalar()) return node.Scalar();
  if (node.IsDefined() && !node.IsNull())
    throw std::runtime_error(cfg.where(key, "'" + key + "' must be " + type).format());
  // Absent or null: the default (num_threads: the machine's), when there is one.
  const std::string text = spec->computed_default ? spec->computed_default() : spec->value.default_value;
  if (text.empty() || classify_plain(text) == ScalarKind::Null) return std::nullopt;
  if (node.IsDefined() && !spec->computed_default) return std::nullopt;  // an explicit null
  return text;
}

template <class T>
T parsed(const Config& cfg, const std::string& key, const std::optional<T>& value, const char* type) {
  if (!value) throw std::runtime_error(cfg.where(key, "'" + key + "' must be " + type + ", not null").format());
  return *value;
}

template <class T, class Parse>
std::optional<T> optional_setting(const Config& cfg, const std::string& key, const char* type, Parse parse) {
  const auto text = setting_text(cfg, key, type);
  if (!text) return std::nullopt;
  const std::optional<T> value = parse(*text);
  if (!value) throw std::runtime_error(cfg.where(key, "'" + key + "' must be " + type + ", got '" + *text + "'").format());
  return value;
}

}  // namespace

std::string setting_string(const Config& cfg, const std::string& key) {
  return parsed<std::string>(cfg, key, setting_text(cfg, key, "a string"), "a string");
}

bool setting_bool(const Config& cfg, const std::string& key) {
  return parsed<bool>(cfg, key, optional_setting<bool>(cfg, key, "true or false", parse_bool), "true or false");
}

int64_t setting_int(const Config& cfg, const std::string& key) {
  return parsed<int64_t>(cfg, key, setting_optional_int(cfg, key), "an integer");
}

double setting_float(const Config& cfg, const std::string& key) {
  return parsed<double>(cfg, key, setting_optional_float(cfg, key), "a number");
}

std::optional<int64_t> setting_optional_int(const Config& cfg, const std::string& key) {
  return optional_setting<int64_t>(cfg, key, "an integer", parse_int);
}

std::optional<double> setting_optional_float(const Config& cfg, const std::string& key) {
  return optional_setting<double>(cfg, key, "a number", parse_float);
}

std::vector<std::string> no_effect_warnings(const Config& cfg) {
  std::vector<std::string> out;
  auto warn = [&](const std::string& what, const KeySpec& k) {
    out.push_back(what + " is accepted for torchtune configs but does nothing here (" + k.value.help + ")");
  };
  for (const KeySpec& k : recipe_schema()) {
    if (k.effect != Effect::NoEffect) continue;
    const std::string& key = k.value.name;
    if (!k.component_kind.empty()) {
      if (cfg.has_component(key) && cfg.get_bool(key + ".enabled", false)) warn(key + ".enabled: true", k);
      continue;
    }
    const YAML::Node node = cfg.at(key);
    if (!node.IsDefined() || !node.IsScalar() || k.value.default_value.empty()) continue;
    const auto value = parse_bool(node.Scalar()), fallback = parse_bool(k.value.default_value);
    const bool differs = value && fallback ? *value != *fallback : node.Scalar() != k.value.default_value;
    if (differs) warn(key + ": " + node.Scalar(), k);
  }
  return out;
}

}  // namespace tb::config
