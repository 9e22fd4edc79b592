// The keys a recipe config may hold at its top level: their types, defaults, which of them hold
// components (and of which kind), and which recipes accept them. The table itself is in schema.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/registry.h"

namespace tb::config {

inline const char* const kFullFinetuneRecipe = "full_finetune_single_device";
inline const char* const kLoraFinetuneRecipe = "lora_finetune_single_device";
inline const char* const kFullDistributedRecipe = "full_finetune_distributed";
inline const char* const kLoraDistributedRecipe = "lora_finetune_distributed";
// Not a recipe: what `eval` and `generate` validate against (the training keys become optional).
inline const char* const kInferenceVerbs = "eval";
// Not a recipe: what `export` validates a config against: every recipe's keys are accepted (a training
// config exports as it is), only what builds the model and its tokenizer is required.
inline const char* const kExportVerb = "export";

enum class Effect {
  Implemented,  // the recipes honour it
  NoEffect,     // accepted (torchtune configs carry it) with a checked value, but it changes nothing here
};

struct KeySpec {
  ArgSpec value;                      // name, type, required, nullable, default (YAML text), help, choices
  std::string component_kind;         // non-empty: the key holds a `_component_` node of this kind
  bool list_of_components = false;    // a list of components is accepted too (dataset: concatenated)
  std::vector<std::string> recipes;   // empty: every recipe; otherwise only these
  Effect effect = Effect::Implemented;
  std::optional<int64_t> min_value;   // Int keys: the smallest accepted value
  std::function<std::string()> computed_default;  // a default that depends on the machine (num_threads)
  bool training_only = false;         // required for the recipes, optional for kInferenceVerbs

  bool applies_to(const std::string& recipe) const;
  bool required_for(const std::string& recipe) const;
};

// Every top-level key of a recipe config, in the order a config usually lists them.
const std::vector<KeySpec>& recipe_schema();
const KeySpec* find_key(const std::string& name);
// The recipes the schema knows (for messages and `ls`).
std::vector<std::string> schema_recipes();

// A top-level key as the recipes read it: the config's value, else the schema's default, so code and
// schema cannot disagree on a default. Throws std::logic_error for a key the schema does not have and
// std::runtime_error (naming where it was set) for a value of another type.
std::string setting_string(const Config& cfg, const std::string& key);
bool setting_bool(const Config& cfg, const std::string& key);
int64_t setting_int(const Config& cfg, const std::string& key);  // null is an error
double setting_float(const Config& cfg, const std::string& key);  // null is an error
std::optional<int64_t> setting_optional_int(const Config& cfg, const std::string& key);  // nullopt for null
std::optional<double> setting_optional_float(const Config& cfg, const std::string& key);  // nullopt for null

// One line for each key that is accepted but does nothing here and is set to something that would do
// something in torchtune (a "no effect" row set away from its default, an enabled profiler): a run
// logs them as warnings.
std::vector<std::string> no_effect_warnings(const Config& cfg);

// The threads each of `workers` processes on this machine trains with: `asked` (num_threads) when the
// processes together fit the cores, else the cores divided among them, at least 1 (threads beyond the
// cores only wait on each other: 2 workers x 2 threads on 2 cores made steps 30-80x slower). `note` says
// what was changed, empty when nothing was.
struct WorkerThreads {
  int64_t threads = 1;
  std::string note;
};
WorkerThreads worker_threads(int64_t asked, int workers);

}  // namespace tb::config
