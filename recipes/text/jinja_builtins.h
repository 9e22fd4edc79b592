// Jinja's builtins as the sandbox exposes them: filters, tests, the globals every template sees
// (range, dict, namespace, cycler, joiner, and transformers' raise_exception and strftime_now), and the
// attribute/item lookup that finds dict keys, list items and the methods of str, dict and list.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace tb::text::jinja::detail {

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

// Binds `args` to `params` as Python binds a call of `function`: positional first, then keywords;
// too many, unknown or repeated arguments and missing required ones (the first `required` params) raise.
std::vector<std::optional<Value>> bind_args(const Args& args, const std::vector<std::string>& params,
                                            const std::string& function, size_t required = 0);

using FilterFn = std::function<Value(const Value& input, const Args& args)>;
using TestFn = std::function<bool(const Value& input, const Args& args)>;
const FilterFn* find_filter(const std::string& name);
const TestFn* find_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& input, const Args& args);
bool apply_test(const std::string& name, const Value& input, const Args& args);

// a.name: the attribute (a method of str/dict/list, a namespace or object attribute), else the dict key.
Value get_attribute(const Value& obj, const std::string& name);
// a[key]: the dict key or list/str index, else the attribute of that name; undefined when missing.
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                const std::optional<int64_t>& step);
// The bound method `name` of a str, dict or list, or undefined (an unsafe one for list/dict mutators).
Value find_method(const Value& obj, const std::string& name);

// The globals of every render (transformers' environment).
const std::vector<std::pair<std::string, Value>>& global_values();

// str.format as the sandbox's formatter runs it.
std::string brace_format(const std::string& fmt, const Args& args);

}  // namespace tb::text::jinja::detail
