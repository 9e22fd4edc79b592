// Recipe configs: YAML loading, torchtune-style overrides, `${key}` interpolation and validation
// against the component registry. Every problem comes back as a Diagnostic, never as an exception
// escaping to the user.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tb::config {

class Registry;

// One problem with a config. Formats as `file:line:col: message` (1-based line and column) or,
// for a problem that came from a command-line override, `override 'a.b=v': message`.
struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string override_text;  // non-empty when the problem is in an override
  std::string message;
  std::string format() const;
};

struct Config {
  YAML::Node root;          // resolved: overrides applied, interpolation done
  std::string source_path;  // the file it was read from, or a display name for text
  std::string recipe;       // which recipe validated it ("" = generic checks only)

  // Dotted-path access: "optimizer.lr", "checkpointer.checkpoint_files". Invalid node if absent.
  YAML::Node at(const std::string& dotted) const;
  // The YAML text of the resolved config (what `cp` and the GUI editor show).
  std::string to_yaml() const;

  // Typed reads of a validated config; `fallback` when the key is absent or null.
  int64_t get_int(const std::string& dotted, int64_t fallback) const;
  double get_float(const std::string& dotted, double fallback) const;
  bool get_bool(const std::string& dotted, bool fallback) const;
  std::string get_string(const std::string& dotted, const std::string& fallback) const;
  // Whether `dotted` holds a component (a map with `_component_`), e.g. an optional lr_scheduler.
  bool has_component(const std::string& dotted) const;

  // A diagnostic pointing at where `dotted` was set (its file line and column, or the override that set
  // it), for problems found later, e.g. when a run finds that checkpointer.checkpoint_dir does not exist.
  Diagnostic where(const std::string& dotted, const std::string& message) const;

  // Where each value was set, by dotted path (list items as a.0); message empty. Filled by load_*.
  std::map<std::string, Diagnostic> sources;
};

struct LoadResult {
  std::optional<Config> config;          // set when there are no diagnostics
  std::vector<Diagnostic> diagnostics;   // all problems found, in file order
  bool ok() const { return config.has_value() && diagnostics.empty(); }
};

struct LoadOptions {
  std::vector<std::string> overrides;  // `a.b=v`, `a=[x,y]`, `dataset=name`, `~a.b`
  std::string recipe;                  // validate the recipe-specific keys of this recipe
  // The components `_component_` names are looked up in, with their arguments (components::builtin()
  // for the product's own). nullptr: components are checked for their shape only (a map with a name).
  const Registry* registry = nullptr;
};

// `name_or_path` is a file path or a bundled config name such as `tiny/full_single_device`
// (with or without .yaml).
LoadResult load_file(const std::string& name_or_path, const LoadOptions& options = {});
// The same for text held in memory (the GUI editor); `display_name` stands in for the file name.
LoadResult load_text(const std::string& text, const std::string& display_name, const LoadOptions& options = {});

struct BundledConfig {
  std::string name;    // e.g. llama2/7B_full_single_device
  std::string path;    // absolute path of the YAML file
  std::string recipe;  // the recipe it is written for
};
std::vector<BundledConfig> bundled_configs();
// The folder holding bundled configs and resources: env TUNEBENCH_SHARE_DIR if set, else
// <dir of the executable>/../share/tunebench (the build tree and an installed prefix look alike).
std::string share_dir();

// The path of a config file: `name_or_path` itself when it is a file, else the bundled config of that name
// (with or without .yaml). Empty when neither exists.
std::string find_config(const std::string& name_or_path);

// A config's bundled name (`tiny/full_single_device`) when `path` is a file under share_dir()/configs,
// else empty: such a file is the product's, opened read-only (the window saves it under a new path).
std::string bundled_config_name(const std::string& path);

// Whether the share folder is a build tree's (`build/share/tunebench`, beside the build's CMakeCache.txt)
// rather than an installed one (`/usr/share/tunebench`, a package extracted anywhere).
bool share_is_build_tree();

// An input file or folder a config names (a model, checkpoint, tokenizer or data file): absolute, relative
// to the working folder, or else relative to the share folder, where the bundled configs' `resources/...`
// live once installed. The first that exists, or the path as given (its error then names it as written).
std::string resolve_input_path(const std::string& path);

// The recipe a config is written for: a `# recipe: <name>` comment at the top of the file wins; else the
// file name: a `lora`/`qlora`/`dora`/`qdora` word -> lora_finetune_single_device, a `full` word ->
// full_finetune_single_device (words are split at '_' and '-'); an `eval`, `generation`, `export`...
// word -> kInferenceVerbs (no training keys); else "".
std::string recipe_for_config(const std::string& path);

// Every diagnostic formatted, one per line.
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);

}  // namespace tb::config
