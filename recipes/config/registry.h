// The component registry's mechanism: `_component_` names (torchtune's dotted names and short aliases)
// mapped to C++ builders with typed, validated arguments. What is registered is decided at the top of
// the engine (components/builtin.h), explicitly (no static self-registration: the linker drops
// unreferenced objects of a static library).
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tb::config {

enum class ArgType { Int, Float, Bool, String, Path, IntList, StringList, Any };

struct ArgSpec {
  std::string name;
  ArgType type = ArgType::Any;
  bool required = false;
  bool nullable = false;      // `null` is an accepted value (e.g. checkpoint_dir: null)
  std::string default_value;  // YAML text of the default, empty when there is none
  std::string help;
  std::vector<std::string> choices = {};  // when non-empty, the value must be one of these (String, Path)

  // Named setters, so a spec reads as what it says: arg("lr", ArgType::Float, "learning rate").or_default("0.001")
  ArgSpec& must_be_set(bool needed = true) {
    required = needed;
    return *this;
  }
  ArgSpec& or_null() {
    nullable = true;
    return *this;
  }
  ArgSpec& or_default(std::string yaml) {
    default_value = std::move(yaml);
    return *this;
  }
  ArgSpec& one_of(std::vector<std::string> allowed) {
    choices = std::move(allowed);
    return *this;
  }
};

// An optional argument of `type` with no default; chain must_be_set(), or_null(), or_default(), one_of().
inline ArgSpec arg(std::string name, ArgType type, std::string help = {}) {
  ArgSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.help = std::move(help);
  return spec;
}

// What the config of one component may hold. `kind` says where it may appear.
struct ComponentSpec {
  std::string kind;  // model, tokenizer, dataset, checkpointer, optimizer, lr_scheduler, loss, metric_logger
  std::string name;  // canonical dotted name, e.g. torchtune.models.llama2.llama2_7b
  std::vector<std::string> aliases;  // short names, e.g. llama2_7b
  std::vector<ArgSpec> args;
  std::string help;
  bool allow_extra_args = false;  // accept keys not listed in args (kept raw)
  // Non-empty: a name torchtune's configs use that cannot work here; validation reports this reason
  // (one line) instead of "unknown component".
  std::string unsupported = {};
  // Checks of the arguments together at validation time (after their types): the message of the first
  // problem, with the argument it is about, or "" (e.g. a dataset `source` naming a Hub dataset).
  std::function<std::string(const YAML::Node& node, std::string* argument)> check = {};
};

// A component of `kind` named `name` that is refused at validation time with `reason`.
inline ComponentSpec unsupported_component(std::string kind, std::string name, std::vector<std::string> aliases,
                                           std::string reason) {
  ComponentSpec spec;
  spec.kind = std::move(kind);
  spec.name = std::move(name);
  spec.aliases = std::move(aliases);
  spec.unsupported = std::move(reason);
  spec.allow_extra_args = true;
  return spec;
}

// The validated arguments of one component node. Getters take defaults from the spec.
class Args {
 public:
  Args(const ComponentSpec* spec, YAML::Node node) : spec_(spec), node_(std::move(node)) {}
  bool has(const std::string& name) const;  // present and not null (or has a non-empty default)
  bool is_null(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::string get_string(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  YAML::Node raw(const std::string& name) const;  // value or its default, as YAML
  const YAML::Node& node() const { return node_; }
  const ComponentSpec& spec() const { return *spec_; }

 private:
  YAML::Node value_or_default(const std::string& name) const;
  const ComponentSpec* spec_;
  YAML::Node node_;
};

class Registry {
 public:
  template <class Product>
  void add(ComponentSpec spec, std::function<Product(const Args&)> builder) {
    add_erased(std::move(spec), std::any(std::move(builder)));
  }

  // nullptr when the name (canonical or alias) is unknown.
  const ComponentSpec* find(const std::string& name) const;
  std::vector<const ComponentSpec*> of_kind(const std::string& kind) const;
  std::vector<const ComponentSpec*> all() const;  // in registration order

  // Builds a component from a node holding `_component_` and its arguments. The node must have
  // been validated; throws std::runtime_error on an unknown name or a product type mismatch.
  template <class Product>
  Product build(const YAML::Node& node) const {
    const Entry& e = entry_for(node);
    auto* fn = std::any_cast<std::function<Product(const Args&)>>(&e.builder);
    if (!fn) throw std::runtime_error("component '" + e.spec.name + "' does not build this kind of object");
    return (*fn)(Args(&e.spec, node));
  }

 private:
  struct Entry {
    ComponentSpec spec;
    std::any builder;
  };
  void add_erased(ComponentSpec spec, std::any builder);
  const Entry& entry_for(const YAML::Node& node) const;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::map<std::string, const Entry*> by_name_;
};

}  // namespace tb::config
