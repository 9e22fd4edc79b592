// Jinja's tests (jinja2/tests.py) and the globals of transformers' environment (jinja_builtins.h).
#include "text/jinja_builtins.h"

#include <ctime>
#include <unordered_map>

#include "text/jinja_eval.h"
#include "text/jinja_strings.h"

namespace tb::text::jinja::detail {
namespace {

Value one_arg(const Args& args, const char* test) { return *bind_args(args, {"other"}, test, 1)[0]; }


bool is_iterable(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::String:
    case Value::Kind::List:
    case Value::Kind::Dict:
      return true;
    case Value::Kind::Object:
      return std::string(v.object().type_name()) == "LoopContext";
    default:
      return false;
  }
}

bool same(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::None:
      return true;
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float:
    case Value::Kind::String:
      return equals(a, b);
    default:
      return a.identity() == b.identity();
  }
}

std::unordered_map<std::string, TestFn> make_tests() {
  std::unordered_map<std::string, TestFn> t;
  auto none_args = [](const char* name) { return [name](const Args& args) { bind_args(args, {}, name); }; };
  t["defined"] = [=](const Value& v, const Args& a) { return none_args("defined")(a), !v.is_undefined(); };
  t["undefined"] = [=](const Value& v, const Args& a) { return none_args("undefined")(a), v.is_undefined(); };
  t["none"] = [=](const Value& v, const Args& a) { return none_args("none")(a), v.is_none(); };
  t["boolean"] = [=](const Value& v, const Args& a) { return none_args("boolean")(a), v.is_bool(); };
  t["true"] = [=](const Value& v, const Args& a) { return none_args("true")(a), v.is_bool() && v.as_bool(); };
  t["false"] = [=](const Value& v, const Args& a) { return none_args("false")(a), v.is_bool() && !v.as_bool(); };
  t["string"] = [=](const Value& v, const Args& a) { return none_args("string")(a), v.is_string(); };
  t["number"] = [=](const Value& v, const Args& a) { return none_args("number")(a), v.is_number(); };
  t["integer"] = [=](const Value& v, const Args& a) { return none_args("integer")(a), v.is_int(); };
  t["float"] = [=](const Value& v, const Args& a) { return none_args("float")(a), v.is_float(); };
  t["mapping"] = [=](const Value& v, const Args& a) { return none_args("mapping")(a), v.is_dict(); };
  t["iterable"] = [=](const Value& v, const Args& a) { return none_args("iterable")(a), is_iterable(v); };
  t["sequence"] = [=](const Value& v, const Args& a) {
    none_args("sequence")(a);
    return v.is_undefined() || v.is_string() || v.is_dict() || (v.is_list() && !v.list().is_iterator());
  };
  t["callable"] = [=](const Value& v, const Args& a) {
    return none_args("callable")(a), v.is_undefined() || v.is_callable();
  };
  t["even"] = [=](const Value& v, const Args& a) {
    return none_args("even")(a), equals(binary("%", v, Value(2)), Value(0));
  };
  t["odd"] = [=](const Value& v, const Args& a) {
    return none_args("odd")(a), equals(binary("%", v, Value(2)), Value(1));
  };
  t["divisibleby"] = [](const Value& v, const Args& a) {
    const auto b = bind_args(a, {"num"}, "divisibleby", 1);
    return equals(binary("%", v, *b[0]), Value(0));
  };
  t["lower"] = [=](const Value& v, const Args& a) { return none_args("lower")(a), py_is_all_cased(to_str(v), false); };
  t["upper"] = [=](const Value& v, const Args& a) { return none_args("upper")(a), py_is_all_cased(to_str(v), true); };
  t["escaped"] = [=](const Value&, const Args& a) { return none_args("escaped")(a), false; };
  t["in"] = [](const Value& v, const Args& a) {
    const auto b = bind_args(a, {"seq"}, "in", 1);
    return contains(*b[0], v);
  };
  t["sameas"] = [](const Value& v, const Args& a) { return same(v, one_arg(a, "sameas")); };
  t["filter"] = [=](const Value& v, const Args& a) {
    return none_args("filter")(a), v.is_string() && find_filter(v.str());
  };
  t["test"] = [=](const Value& v, const Args& a) { return none_args("test")(a), v.is_string() && find_test(v.str()); };
  t["eq"] = t["equalto"] = t["=="] = [](const Value& v, const Args& a) { return equals(v, one_arg(a, "eq")); };
  t["ne"] = t["!="] = [](const Value& v, const Args& a) { return !equals(v, one_arg(a, "ne")); };
  t["lt"] = t["lessthan"] = t["<"] = [](const Value& v, const Args& a) { return less(v, one_arg(a, "lt"), "<"); };
  t["le"] = t["<="] = [](const Value& v, const Args& a) { return !less(one_arg(a, "le"), v, "<="); };
  t["gt"] = t["greaterthan"] = t[">"] = [](const Value& v, const Args& a) { return less(one_arg(a, "gt"), v, ">"); };
  t["ge"] = t[">="] = [](const Value& v, const Args& a) { return !less(v, one_arg(a, "ge"), ">="); };
  return t;
}

// cycler(*items): next(), reset(), current.
class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  const char* type_name() const override { return "Cycler"; }
  Value attribute(const std::string& name) const override {
    auto* self = const_cast<Cycler*>(this);
    if (name == "current") return items_[position_];
    if (name == "next")
      return make_function("next", [self](Renderer&, Args& args) {
        bind_args(args, {}, "next");
        const Value v = self->items_[self->position_];
        self->position_ = (self->position_ + 1) % self->items_.size();
        return v;
      });
    if (name == "reset")
      return make_function("reset", [self](Renderer&, Args& args) {
        bind_args(args, {}, "reset");
        self->position_ = 0;
        return Value::none();
      });
    return Object::attribute(name);
  }

 private:
  std::vector<Value> items_;
  size_t position_ = 0;
};

// joiner(sep): "" the first time it is called, then sep.
class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  const char* type_name() const override { return "Joiner"; }
  bool callable() const override { return true; }
  Value call(Renderer&, Args& args) override {
    bind_args(args, {}, "joiner");
    if (!used_) {
      used_ = true;
      return Value("");
    }
    return Value(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

int64_t range_arg(const Value& v) {
  if (!v.is_int() && !v.is_bool()) throw Fault("'" + type_name(v) + "' object cannot be interpreted as an integer");
  return v.as_int();
}

std::vector<std::pair<std::string, Value>> make_globals() {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back("range", make_function("range", [](Renderer&, Args& args) {
                   if (!args.keywords.empty()) throw Fault("range() takes no keyword arguments");
                   const auto& p = args.positional;
                   if (p.empty() || p.size() > 3)
                     throw Fault("range expected at most 3 arguments, got " + std::to_string(p.size()));
                   const int64_t start = p.size() == 1 ? 0 : range_arg(p[0]);
                   const int64_t stop = range_arg(p.size() == 1 ? p[0] : p[1]);
                   const int64_t step = p.size() == 3 ? range_arg(p[2]) : 1;
                   if (step == 0) throw Fault("range() arg 3 must not be zero");
                   // In 128 bits: the span of two 64-bit ends overflows 64.
                   using wide = __int128;
                   const wide count = step > 0 ? (stop > start ? (wide(stop) - start + step - 1) / step : 0)
                                               : (start > stop ? (wide(start) - stop - step - 1) / -wide(step) : 0);
                   if (count > 100000)
                     throw Fault("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
                   std::vector<Value> items;
                   for (int64_t i = 0; i < count; ++i) items.push_back(Value(start + i * step));
                   return make_list(std::move(items));
                 }));
  g.emplace_back("dict", make_function("dict", [](Renderer&, Args& args) {
                   std::vector<std::pair<Value, Value>> entries;
                   auto d = std::make_shared<DictData>();
                   if (args.positional.size() > 1)
                     throw Fault("dict expected at most 1 argument, got " + std::to_string(args.positional.size()));
                   if (args.positional.size() == 1) {
                     const Value& src = args.positional[0];
                     if (src.is_dict()) {
                       for (const auto& [k, v] : src.dict().entries) d->set(k, v);
                     } else {
                       for (const auto& pair : iterate(src)) {
                         const auto kv = iterate(pair);
                         if (kv.size() != 2)
                           throw Fault("dictionary update sequence element has length " + std::to_string(kv.size()) +
                                       "; 2 is required");
                         d->set(kv[0], kv[1]);
                       }
                     }
                   }
                   for (const auto& [k, v] : args.keywords) d->set(Value(k), v);
                   return Value(std::move(d));
                 }));
  g.emplace_back("namespace", make_function("namespace", [](Renderer& renderer, Args& args) {
                   auto ns = std::make_shared<NamespaceData>();
                   renderer.adopt(ns);
                   for (const auto& src : args.positional) {
                     if (!src.is_dict()) throw Fault("namespace() takes mappings as positional arguments");
                     for (const auto& [k, v] : src.dict().entries) ns->set(to_str(k), v);
                   }
                   for (const auto& [k, v] : args.keywords) ns->set(k, v);
                   return Value(std::move(ns));
                 }));
  g.emplace_back("cycler", make_function("cycler", [](Renderer&, Args& args) {
                   if (args.positional.empty()) throw Fault("at least one item has to be provided");
                   return Value(std::static_pointer_cast<Object>(std::make_shared<Cycler>(args.positional)));
                 }));
  g.emplace_back(
      "joiner", make_function("joiner", [](Renderer&, Args& args) {
        const auto a = bind_args(args, {"sep"}, "joiner");
        return Value(std::static_pointer_cast<Object>(std::make_shared<Joiner>(a[0] ? to_str(*a[0]) : ", ")));
      }));
  // transformers' globals.
  g.emplace_back("raise_exception", make_function("raise_exception", [](Renderer&, Args& args) -> Value {
                   const auto a = bind_args(args, {"message"}, "raise_exception", 1);
                   throw Fault(to_str(*a[0]));
                 }));
  g.emplace_back("strftime_now", make_function("strftime_now", [](Renderer&, Args& args) {
                   const auto a = bind_args(args, {"format"}, "strftime_now", 1);
                   if (!a[0]->is_string()) throw Fault("strftime() argument 1 must be str, not " + type_name(*a[0]));
                   const std::time_t now = std::time(nullptr);
                   std::tm local{};
                   localtime_r(&now, &local);
                   char buf[512];
                   const size_t n = std::strftime(buf, sizeof buf, a[0]->str().c_str(), &local);
                   return Value(std::string(buf, n));
                 }));
  return g;
}

}  // namespace

const TestFn* find_test(const std::string& name) {
  static const auto tests = make_tests();
  const auto it = tests.find(name);
  return it == tests.end() ? nullptr : &it->second;
}

bool apply_test(const std::string& name, const Value& input, const Args& args) {
  const TestFn* fn = find_test(name);
  if (!fn) throw Fault("No test named '" + name + "' found.");
  return (*fn)(input, args);
}

const std::vector<std::pair<std::string, Value>>& global_values() {
  static const auto globals = make_globals();
  return globals;
}

}  // namespace tb::text::jinja::detail
