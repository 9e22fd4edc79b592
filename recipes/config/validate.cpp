#include "config/validate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "config/schema.h"
#include "config/suggest.h"

namespace tb::config {
namespace {

// "a", "a and b", "a, b and c".
std::string join_recipes(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}


const char* expected(ArgType t) {
  switch (t) {
    case ArgType::Int: return "an integer";
    case ArgType::Float: return "a number";
    case ArgType::Bool: return "true or false";
    case ArgType::String: return "a string";
    case ArgType::Path: return "a path";
    case ArgType::IntList: return "a list of integers";
    case ArgType::StringList: return "a list of strings";
    case ArgType::Any: return "a value";
  }
  return "a value";
}

// Arguments that mean a size, rate or count wherever a component takes them (torchtune's optimizers,
// schedulers, LoRA builders): a negative value is a typo that would fail, or train wrongly, later.
bool never_negative(const std::string& path) {
  static const std::set<std::string> names = {
      "lr", "weight_decay", "eps", "momentum", "clip_grad_norm", "num_warmup_steps", "num_training_steps",
      "lora_rank", "lora_alpha", "lora_dropout", "max_seq_len", "num_cycles", "warmup_steps", "active_steps",
      "wait_steps", "keep_last_n_checkpoints"};
  const auto dot = path.rfind('.');
  return names.count(dot == std::string::npos ? path : path.substr(dot + 1)) > 0;
}

// A value as quoted in a message: long ones cut, with their length.
std::string shown(const std::string& text) {
  constexpr size_t kMax = 60;
  if (text.size() <= kMax) return text;
  return text.substr(0, kMax) + "... (" + std::to_string(text.size()) + " characters)";
}

bool all_digits(const std::string& t) {
  const size_t start = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
  return t.size() > start && std::all_of(t.begin() + static_cast<long>(start), t.end(),
                                         [](char c) { return c >= '0' && c <= '9'; });
}

std::string got(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Null: return "null";
    case Node::Kind::Map: return "a map";
    case Node::Kind::Sequence: return "a list";
    case Node::Kind::Scalar: break;
  }
  switch (n.scalar_kind()) {
    case ScalarKind::Int: return "the integer " + n.text;
    case ScalarKind::Float: return "the number " + n.text;
    case ScalarKind::Bool: return "the boolean " + n.text;
    case ScalarKind::Null: return "null";
    case ScalarKind::String: break;
  }
  bool looks_typed = classify_plain(n.text) != ScalarKind::String;
  if (!looks_typed && all_digits(n.text) && n.tag != "!")
    return "the integer " + shown(n.text) + ", which does not fit in 64 bits";
  return "the string '" + shown(n.text) + "'" + (looks_typed ? " (quoted, so not a number or boolean)" : "");
}

class Validator {
 public:
  Validator(const std::string& recipe, const Registry* registry, const std::string& file, std::vector<Diagnostic>& diags)
      : recipe_(recipe), registry_(registry), file_(file), diags_(diags) {}

  void top_level(const Node& root) {
    if (!root.is_map()) {
      report(root, "a config must be a map of keys (model:, optimizer:, ...), got " + got(root));
      return;
    }
    std::vector<std::string> accepted;
    for (const KeySpec& k : recipe_schema())
      if (k.applies_to(recipe_)) accepted.push_back(k.value.name);
    for (const Node& entry : root.children) {
      const KeySpec* spec = find_key(entry.key);
      if (spec && !spec->applies_to(recipe_)) {
        report(entry,
               "'" + entry.key + "' is only accepted by " + join_recipes(spec->recipes) + ", not by " + recipe_, true);
        continue;
      }
      if (!spec) {
        report(entry, "unknown key '" + entry.key + "'" + did_you_mean(entry.key, accepted), true);
        continue;
      }
      if (!spec->component_kind.empty())
        component_slot(entry, *spec);
      else
        check_value(entry, spec->value, entry.key, spec->min_value);
    }
    for (const KeySpec& k : recipe_schema()) {
      if (!k.required_for(recipe_) || root.find(k.value.name)) continue;
      report(root, "missing required key '" + k.value.name + "' (" + k.value.help + ")");
    }
    optimizer_in_backward(root);
  }

 private:
  void report(const Node& n, const std::string& message, bool at_key = false) {
    diags_.push_back(diagnostic_at(n, file_, message, at_key));
  }

  // Each parameter steps as soon as its gradient is ready in backward: no second micro-batch can add to
  // it, and the norm of all gradients is not known before they have stepped (torchtune refuses both too).
  void optimizer_in_backward(const Node& root) {
    const Node* in_bwd = root.find("optimizer_in_bwd");
    if (!in_bwd || !in_bwd->is_scalar() || parse_bool(in_bwd->text) != std::optional<bool>(true)) return;
    if (const Node* acc = root.find("gradient_accumulation_steps");
        acc && acc->is_scalar() && parse_int(acc->text).value_or(1) > 1)
      report(*acc, "gradient_accumulation_steps: must be 1 with optimizer_in_bwd: true (each parameter steps as "
                   "soon as its gradient is ready); set optimizer_in_bwd: false to accumulate");
    if (const Node* clip = root.find("clip_grad_norm"); clip && !clip->is_null())
      report(*clip, "clip_grad_norm: cannot clip with optimizer_in_bwd: true (the norm of all gradients is known only "
                    "after every parameter has stepped); set clip_grad_norm: null or optimizer_in_bwd: false");
  }

  // OmegaConf's "mandatory, not set" marker (written so it is not read as a trigraph).
  bool is_mandatory_marker(const Node& n) { return n.is_scalar() && n.tag != "!" && n.text == "\?\?\?"; }

  // One plain value (a top-level key or a component argument). `path` names it in messages.
  void check_value(const Node& n, const ArgSpec& spec, const std::string& path, std::optional<int64_t> min = {}) {
    if (n.poisoned) return;
    if (is_mandatory_marker(n)) {
      report(n, path + ": mandatory value '\?\?\?' is not set (set it with " + path + "=...)");
      return;
    }
    if (n.is_null()) {
      if (!spec.nullable && spec.type != ArgType::Any) report(n, path + ": expected " + expected(spec.type) + ", got null");
      return;
    }
    auto mismatch = [&] { report(n, path + ": expected " + std::string(expected(spec.type)) + ", got " + got(n)); };
    ScalarKind k = n.scalar_kind();
    switch (spec.type) {
      case ArgType::Any:
        return;
      case ArgType::Int:
        if (!n.is_scalar() || k != ScalarKind::Int) return mismatch();
        if (min && *parse_int(n.text) < *min)
          report(n, path + ": must be at least " + std::to_string(*min) + ", got " + n.text);
        else if (*parse_int(n.text) < 0 && never_negative(path))
          report(n, path + ": must not be negative, got " + n.text);
        return;
      case ArgType::Float: {
        if (!n.is_scalar() || (k != ScalarKind::Int && k != ScalarKind::Float)) return mismatch();
        const double value = parse_float(n.text).value_or(0.0);
        if (std::isnan(value)) report(n, path + ": must be a number, got " + n.text);
        else if (value < 0 && never_negative(path)) report(n, path + ": must not be negative, got " + n.text);
        return;
      }
      case ArgType::Bool:
        if (!n.is_scalar() || k != ScalarKind::Bool) return mismatch();
        return;
      case ArgType::String:
      case ArgType::Path:
        if (!n.is_scalar()) return mismatch();
        if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), n.text) == spec.choices.end())
          report(n, path + ": expected one of " + join_names(spec.choices) + ", got '" + n.text + "'" +
                        did_you_mean(n.text, spec.choices));
        return;
      case ArgType::IntList:
      case ArgType::StringList: {
        if (!n.is_sequence()) return mismatch();
        for (size_t i = 0; i < n.children.size(); ++i) {
          const Node& item = n.children[i];
          if (item.poisoned) continue;
          bool ok = spec.type == ArgType::IntList ? item.is_scalar() && item.scalar_kind() == ScalarKind::Int
                                                  : item.is_scalar();
          if (!ok)
            report(item, join_index(path, i) + ": expected " + (spec.type == ArgType::IntList ? "an integer" : "a string") +
                             " in " + expected(spec.type) + ", got " + got(item));
        }
        return;
      }
    }
  }

  void component_slot(const Node& n, const KeySpec& slot) {
    if (n.poisoned) return;
    if (n.is_null()) {
      if (!slot.value.nullable)
        report(n, n.key + ": expected a map with a '_component_' key naming the " + slot.component_kind + ", got null");
      return;
    }
    if (slot.list_of_components && n.is_sequence()) {
      for (size_t i = 0; i < n.children.size(); ++i) component(n.children[i], slot.component_kind, join_index(n.key, i));
      return;
    }
    component(n, slot.component_kind, n.key);
  }

  // A node holding `_component_` plus arguments. "missing ..." messages point at its key.
  void component(const Node& n, const std::string& kind, const std::string& path) {
    if (n.poisoned) return;
    if (!n.is_map()) {
      std::string hint = n.is_scalar() ? " (write it as `" + path + ":` then `  _component_: " + n.text + "` below)" : "";
      report(n, path + ": expected a map with a '_component_' key naming the " + kind + ", got " + got(n) + hint);
      return;
    }
    const Node* name_node = n.find("_component_");
    if (!name_node) {
      report(n, "missing '_component_' in " + path + " (which " + kind + " to build)", true);
      return;
    }
    if (name_node->poisoned) return;
    if (!name_node->is_scalar() || name_node->scalar_kind() != ScalarKind::String) {
      report(*name_node, path + "._component_: expected a component name, got " + got(*name_node));
      return;
    }
    if (!registry_) return;
    const std::string& name = name_node->text;
    const ComponentSpec* spec = registry_->find(name);
    if (!spec) {
      std::vector<std::string> names;
      for (const ComponentSpec* c : registry_->of_kind(kind)) {
        names.push_back(c->name);
        names.insert(names.end(), c->aliases.begin(), c->aliases.end());
      }
      std::string hint = did_you_mean(name, names);
      if (hint.empty()) {
        std::vector<std::string> canonical;
        for (const ComponentSpec* c : registry_->of_kind(kind)) canonical.push_back(c->name);
        hint = canonical.empty() ? " (no " + kind + " components are registered)"
                                 : " (known " + kind + " components: " + join_names(canonical) + ")";
      }
      report(*name_node, "unknown component '" + name + "' in " + path + hint);
      return;
    }
    if (spec->kind != kind) {
      report(*name_node, "'" + name + "' is a " + spec->kind + " component, but " + path + " needs a " + kind);
      return;
    }
    if (!spec->unsupported.empty()) {
      report(*name_node, path + ": " + name + " is not supported here: " + spec->unsupported);
      return;
    }
    std::vector<std::string> arg_names;
    for (const ArgSpec& a : spec->args) arg_names.push_back(a.name);
    for (const Node& arg : n.children) {
      if (arg.key == "_component_") continue;
      auto it = std::find_if(spec->args.begin(), spec->args.end(), [&](const ArgSpec& a) { return a.name == arg.key; });
      if (it == spec->args.end()) {
        if (spec->allow_extra_args) continue;
        std::string hint = did_you_mean(arg.key, arg_names);
        if (hint.empty())
          hint = arg_names.empty() ? " (" + spec->name + " takes no arguments)"
                                   : " (" + spec->name + " takes: " + join_names(arg_names, 40) + ")";
        report(arg, "unknown key '" + arg.key + "' in " + path + hint, true);
        continue;
      }
      check_value(arg, *it, path + "." + arg.key);
    }
    const size_t before = diags_.size();
    for (const ArgSpec& a : spec->args) {
      if (a.required && !n.find(a.name))
        report(n, "missing required key '" + a.name + "' in " + path + " (" + spec->name + ")", true);
    }
    if (spec->check && diags_.size() == before) {
      std::string argument;
      const std::string problem = spec->check(to_yaml(n), &argument);
      const Node* at = argument.empty() ? nullptr : n.find(argument);
      if (!problem.empty()) report(at ? *at : n, path + (argument.empty() ? "" : "." + argument) + ": " + problem);
    }
  }

  const std::string& recipe_;
  const Registry* registry_;
  const std::string& file_;
  std::vector<Diagnostic>& diags_;
};

}  // namespace

void validate_tree(const Node& root, const std::string& recipe, const Registry* registry, const std::string& file,
                   std::vector<Diagnostic>& diags) {
  Validator(recipe, registry, file, diags).top_level(root);
}

void fill_defaults(Node& root, const std::string& recipe) {
  if (!root.is_map()) return;
  for (const KeySpec& k : recipe_schema()) {
    if (!k.component_kind.empty() || !k.applies_to(recipe)) continue;
    Node* existing = root.find(k.value.name);
    std::string text = k.computed_default ? k.computed_default() : k.value.default_value;
    if (text.empty() || (existing && !(existing->is_null() && k.computed_default))) continue;
    std::vector<Diagnostic> ignored;
    Node value = from_yaml(YAML::Load(text), "", ignored);
    value.mark = {};
    if (existing)
      existing->assign_value(value);
    else
      root.add(k.value.name, value);
  }
}

}  // namespace tb::config
