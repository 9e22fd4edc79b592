#include "config/registry.h"

#include "config/scalar.h"

namespace tb::config {
namespace {

[[noreturn]] void fail(const ComponentSpec& spec, const std::string& name, const std::string& what) {
  throw std::runtime_error("component '" + spec.name + "': argument '" + name + "' " + what);
}

}  // namespace

// ---- Args ------------------------------------------------------------------------------------------------

YAML::Node Args::value_or_default(const std::string& name) const {
  if (node_.IsMap()) {
    const YAML::Node& n = node_;
    YAML::Node v = n[name];
    if (v.IsDefined()) return v;
  }
  for (const ArgSpec& a : spec_->args)
    if (a.name == name && !a.default_value.empty()) return YAML::Load(a.default_value);
  const YAML::Node empty(YAML::NodeType::Map);
  return empty["absent"];  // an invalid node: not set and no default
}

bool Args::has(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  return v.IsDefined() && !v.IsNull();
}

bool Args::is_null(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  return !v.IsDefined() || v.IsNull();
}

YAML::Node Args::raw(const std::string& name) const { return value_or_default(name); }

int64_t Args::get_int(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  if (v.IsScalar() && classify(v) == ScalarKind::Int) return *parse_int(v.Scalar());
  fail(*spec_, name, "is not an integer");
}

double Args::get_float(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  ScalarKind k = classify(v);
  if (v.IsScalar() && (k == ScalarKind::Int || k == ScalarKind::Float)) return *parse_float(v.Scalar());
  fail(*spec_, name, "is not a number");
}

bool Args::get_bool(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  if (v.IsScalar() && classify(v) == ScalarKind::Bool) return *parse_bool(v.Scalar());
  fail(*spec_, name, "is not a boolean");
}

std::string Args::get_string(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  if (!v.IsScalar()) fail(*spec_, name, "is not a string");
  return v.Scalar();
}

std::vector<int64_t> Args::get_ints(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  std::vector<int64_t> out;
  if (v.IsScalar() && classify(v) == ScalarKind::Int) return {*parse_int(v.Scalar())};
  if (!v.IsSequence()) fail(*spec_, name, "is not a list of integers");
  for (const auto& item : v) {
    if (!item.IsScalar() || classify(item) != ScalarKind::Int) fail(*spec_, name, "is not a list of integers");
    out.push_back(*parse_int(item.Scalar()));
  }
  return out;
}

std::vector<std::string> Args::get_strings(const std::string& name) const {
  YAML::Node v = value_or_default(name);
  if (!v.IsDefined() || v.IsNull()) fail(*spec_, name, "is not set");
  if (v.IsScalar()) return {v.Scalar()};
  if (!v.IsSequence()) fail(*spec_, name, "is not a list of strings");
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.IsScalar()) fail(*spec_, name, "is not a list of strings");
    out.push_back(item.Scalar());
  }
  return out;
}

// ---- Registry --------------------------------------------------------------------------------------------

void Registry::add_erased(ComponentSpec spec, std::any builder) {
  std::vector<std::string> names = spec.aliases;
  names.insert(names.begin(), spec.name);
  for (const std::string& n : names)
    if (by_name_.count(n))
      throw std::logic_error("component name '" + n + "' is registered twice (" + by_name_.at(n)->spec.name + " and " +
                             spec.name + ")");
  entries_.push_back(std::make_unique<Entry>(Entry{std::move(spec), std::move(builder)}));
  const Entry* e = entries_.back().get();
  for (const std::string& n : names) by_name_[n] = e;
}

const ComponentSpec* Registry::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second->spec;
}

std::vector<const ComponentSpec*> Registry::of_kind(const std::string& kind) const {
  std::vector<const ComponentSpec*> out;
  for (const auto& e : entries_)
    if (e->spec.kind == kind) out.push_back(&e->spec);
  return out;
}

std::vector<const ComponentSpec*> Registry::all() const {
  std::vector<const ComponentSpec*> out;
  for (const auto& e : entries_) out.push_back(&e->spec);
  return out;
}

const Registry::Entry& Registry::entry_for(const YAML::Node& node) const {
  if (!node.IsMap()) throw std::runtime_error("a component must be a map with a '_component_' key");
  const YAML::Node& n = node;
  YAML::Node name = n["_component_"];
  if (!name.IsDefined() || !name.IsScalar()) throw std::runtime_error("a component must have a '_component_' name");
  auto it = by_name_.find(name.Scalar());
  if (it == by_name_.end()) throw std::runtime_error("unknown component '" + name.Scalar() + "'");
  return *it->second;
}

}  // namespace tb::config
