// Rendering (jinja_eval.h): statements, expressions, scoping, macros, loops and what the observer is told.
#include "text/jinja_eval.h"

#include <algorithm>

namespace tb::text::jinja::detail {

const Value* Frame::find(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent.get()) {
    const auto it = f->vars.find(name);
    if (it != f->vars.end()) return &it->second;
  }
  return nullptr;
}

namespace {

// Macros and recursive loops may call themselves. Python's jinja2 ends endless recursion with a
// RecursionError; here each call is a few C++ frames, so a depth keeps the stack safe.
constexpr int kMaxCallDepth = 100;

// jinja2 would loop for as long as it is told; a template here gets a budget of loop iterations per render
// (chat templates take a few per message; 10,000 messages stay far below it): nested range(100000) loops
// hung tokenize, preview, run and chat.
constexpr int64_t kMaxLoopIterations = 1'000'000;

class CallDepth {
 public:
  explicit CallDepth(int& depth) : depth_(depth) {
    if (++depth_ > kMaxCallDepth) {
      --depth_;
      throw Fault("macros or recursive loops call each other more than " + std::to_string(kMaxCallDepth) +
                  " deep (endless recursion?)");
    }
  }
  ~CallDepth() { --depth_; }
  CallDepth(const CallDepth&) = delete;
  CallDepth& operator=(const CallDepth&) = delete;

 private:
  int& depth_;
};

// The `loop` variable of a for loop.
class LoopObject : public Object {
 public:
  LoopObject(Renderer& renderer, const Stmt& loop, std::shared_ptr<Frame> frame, std::vector<Value> items, int depth)
      : renderer_(renderer), loop_(loop), frame_(std::move(frame)), items_(std::move(items)), depth_(depth) {}

  const char* type_name() const override { return "LoopContext"; }
  bool callable() const override { return true; }
  void set_index(size_t i) { index_ = i; }

  Value attribute(const std::string& name) const override {
    const auto n = static_cast<int64_t>(items_.size());
    const auto i = static_cast<int64_t>(index_);
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i == n - 1);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(static_cast<int64_t>(depth_));
    if (name == "depth0") return Value(static_cast<int64_t>(depth_ - 1));
    if (name == "previtem") return i > 0 ? items_[index_ - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem") return i + 1 < n ? items_[index_ + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
      const size_t at = index_;
      return make_function("cycle", [at](Renderer&, Args& args) {
        if (args.positional.empty()) throw Fault("no items for cycling given");
        return args.positional[at % args.positional.size()];
      });
    }
    if (name == "changed") {
      auto* self = const_cast<LoopObject*>(this);
      return make_function("changed", [self](Renderer&, Args& args) {
        const Value now = make_list(args.positional);
        if (self->has_last_ && equals(self->last_changed_, now)) return Value(false);
        self->last_changed_ = now;
        self->has_last_ = true;
        return Value(true);
      });
    }
    return Object::attribute(name);
  }

  Value call(Renderer&, Args& args) override {
    if (!loop_.recursive) throw Fault("Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.");
    if (args.positional.size() != 1 || !args.keywords.empty()) throw Fault("loop() takes exactly one argument");
    return Value(renderer_.run_loop(loop_, frame_, args.positional[0], depth_ + 1));
  }

 private:
  Renderer& renderer_;
  const Stmt& loop_;
  std::shared_ptr<Frame> frame_;
  std::vector<Value> items_;  // a macro may keep `loop` past the loop
  int depth_;
  size_t index_ = 0;
  Value last_changed_;
  bool has_last_ = false;
};

std::shared_ptr<Frame> child(const std::shared_ptr<Frame>& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  return f;
}

std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  if (v.is_int() || v.is_bool()) return v.as_int();
  throw Fault("slice indices must be integers or None or have an __index__ method");
}

}  // namespace

Renderer::Renderer(const Program& program, RenderObserver* observer) : program_(program), observer_(observer) {}

void Renderer::fail_at(int line, int column, const std::string& message) const {
  throw TemplateError(program_.name, line, column, message);
}

Renderer::~Renderer() {
  // Moved out first: an attribute's destructor may release another namespace of the list.
  for (const auto& weak : namespaces_)
    if (const auto ns = weak.lock()) {
      auto attrs = std::move(ns->attrs);
      ns->attrs.clear();
    }
}

std::string Renderer::render(const std::vector<std::pair<std::string, const Json*>>& variables) {
  auto globals = std::make_shared<Frame>();
  for (const auto& [name, value] : global_values()) globals->vars[name] = value;
  auto vars = child(globals);
  for (const auto& [name, node] : variables) try {
      vars->vars[name] = from_json(*node);
    } catch (const std::invalid_argument& e) {
      fail_at(1, 1, "'" + name + "': " + e.what());
    }
  auto root = child(vars);
  buffers_.assign(1, std::string());
  exec(program_.body, root);
  return std::move(buffers_.front());
}

std::string Renderer::capture(const Body& body, const std::shared_ptr<Frame>& frame) {
  buffers_.emplace_back();
  try {
    exec(body, frame);
  } catch (...) {
    buffers_.pop_back();
    throw;
  }
  std::string text = std::move(buffers_.back());
  buffers_.pop_back();
  return text;
}

Renderer::Flow Renderer::exec(const Body& body, const std::shared_ptr<Frame>& frame) {
  for (const auto& s : body) {
    const Flow flow = exec_stmt(*s, frame);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

// The output (or a block being captured) grows only through here, within the size a template may make.
void Renderer::emit(const std::string& text) {
  check_text_size(uint64_t(out().size()) + text.size(), "the output");
  out() += text;
}

Renderer::Flow Renderer::exec_stmt(const Stmt& s, const std::shared_ptr<Frame>& frame) {
  try {
    switch (s.kind) {
      case Stmt::Kind::Text:
        emit(s.text);
        return Flow::Normal;
      case Stmt::Kind::Print:
        emit(to_str(eval(*s.expr, frame)));
        return Flow::Normal;
      case Stmt::Kind::If:
        for (const auto& [test, body] : s.branches)
          if (truthy(eval(*test, frame))) return exec(body, frame);
        return exec(s.else_body, frame);
      case Stmt::Kind::For:
        return exec_for(s, frame, eval(*s.expr, frame), 1);
      case Stmt::Kind::Set:
        assign(s.target, eval(*s.expr, frame), *frame);
        return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        Value text(capture(s.body, child(frame)));
        if (s.expr) text = eval_filter(*s.expr, frame, &text);
        assign(s.target, text, *frame);
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: {
        const Stmt* macro = &s;
        std::weak_ptr<Frame> defined_in = frame;  // the frame holds the macro: no cycle
        frame->vars[s.text] = make_function(s.text, [macro, defined_in](Renderer& r, Args& args) {
          return r.call_macro(*macro, defined_in.lock(), args, Value::undefined("'caller' is undefined"));
        });
        return Flow::Normal;
      }
      case Stmt::Kind::CallBlock: {
        const Stmt* block = &s;
        std::shared_ptr<Frame> at = frame;
        const Value caller = make_function("caller", [block, at](Renderer& r, Args& args) {
          auto f = child(at);
          const auto bound = bind_args(
              args,
              [&] {
                std::vector<std::string> names;
                for (const auto& p : block->params) names.push_back(p.name);
                return names;
              }(),
              "caller");
          for (size_t i = 0; i < block->params.size(); ++i)
            f->vars[block->params[i].name] = bound[i] ? *bound[i]
                                             : block->params[i].default_value
                                                 ? r.eval(*block->params[i].default_value, f)
                                                 : Value::undefined("'" + block->params[i].name + "' is undefined");
          return Value(r.capture(block->body, f));
        });
        emit(to_str(eval_call(*s.expr, frame, &caller)));
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        const Value text(capture(s.body, child(frame)));
        emit(to_str(eval_filter(*s.expr, frame, &text)));
        return Flow::Normal;
      }
      case Stmt::Kind::With: {
        auto f = child(frame);
        for (const auto& [target, value] : s.assigns) assign(target, eval(*value, frame), *f);
        return exec(s.body, f);
      }
      case Stmt::Kind::Block:
        return exec(s.body, child(frame));
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
      case Stmt::Kind::Generation: {
        const size_t begin = out().size();
        const bool report = observed();
        const Flow flow = exec(s.body, child(frame));  // a call block's body: a scope of its own
        if (report) observer_->on_generation(begin, out().size());
        return flow;
      }
    }
  } catch (const TemplateError&) {
    throw;
  } catch (const std::exception& e) {
    fail_at(s.line, s.column, e.what());
  }
  return Flow::Normal;
}

std::string Renderer::run_loop(const Stmt& loop, const std::shared_ptr<Frame>& frame, const Value& iterable,
                               int depth) {
  const CallDepth call(call_depth_);
  buffers_.emplace_back();
  try {
    exec_for(loop, frame, iterable, depth);
  } catch (...) {
    buffers_.pop_back();
    throw;
  }
  std::string text = std::move(buffers_.back());
  buffers_.pop_back();
  return text;
}

Renderer::Flow Renderer::exec_for(const Stmt& s, const std::shared_ptr<Frame>& frame, const Value& iterable,
                                  int depth) {
  std::vector<Value> items;
  try {
    items = iterate(iterable);
  } catch (const Fault& e) {
    fail_at(s.expr->line, s.expr->column, e.what());
  }
  if (s.filter) {
    std::vector<Value> kept;
    for (auto& item : items) {
      auto f = child(frame);
      assign(s.target, item, *f);
      if (truthy(eval(*s.filter, f))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body, frame);
    return Flow::Normal;
  }
  const bool report = observed() && std::any_of(items.begin(), items.end(), [](const Value& v) { return v.origin(); });
  if (report) observer_->on_loop_begin(out().size());
  auto loop = std::make_shared<LoopObject>(*this, s, frame, items, depth);
  const Value loop_value(std::static_pointer_cast<Object>(loop));
  for (size_t i = 0; i < items.size(); ++i) {
    if (++loop_iterations_ > kMaxLoopIterations)
      fail_at(s.line, s.column,
              "the template ran more than " + std::to_string(kMaxLoopIterations) + " loop iterations (a runaway loop?)");
    auto f = child(frame);
    assign(s.target, items[i], *f);
    loop->set_index(i);
    f->vars["loop"] = loop_value;
    if (report) observer_->on_loop_item(items[i].origin(), out().size());
    if (exec(s.body, f) == Flow::Break) break;
  }
  if (report) observer_->on_loop_end(out().size());
  return Flow::Normal;
}

void Renderer::assign(const Target& target, const Value& value, Frame& frame) {
  switch (target.kind) {
    case Target::Kind::Name:
      frame.vars[target.names[0]] = value;
      return;
    case Target::Kind::Tuple: {
      const std::vector<Value> parts = iterate(value);
      const size_t n = target.names.size();
      if (parts.size() > n) throw Fault("too many values to unpack (expected " + std::to_string(n) + ")");
      if (parts.size() < n)
        throw Fault("not enough values to unpack (expected " + std::to_string(n) + ", got " +
                    std::to_string(parts.size()) + ")");
      for (size_t i = 0; i < n; ++i) frame.vars[target.names[i]] = parts[i];
      return;
    }
    case Target::Kind::NamespaceAttr: {
      const Value* ns = frame.find(target.names[0]);
      if (!ns || ns->is_undefined()) throw Fault("'" + target.names[0] + "' is undefined");
      if (!ns->is_namespace()) throw Fault("cannot assign attribute on non-namespace object");
      ns->ns().set(target.attr, value);
      return;
    }
  }
}

Value Renderer::call_macro(const Stmt& macro, const std::shared_ptr<Frame>& defined_in, Args& args,
                           const Value& caller) {
  const CallDepth call(call_depth_);
  auto f = child(defined_in);
  const size_t n = macro.params.size();
  std::vector<Value> extra_positional;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n)
      f->vars[macro.params[i].name] = args.positional[i];
    else
      extra_positional.push_back(args.positional[i]);
  }
  if (!extra_positional.empty() && !macro.uses_varargs)
    throw Fault("macro '" + macro.text + "' takes not more than " + std::to_string(n) + " argument(s)");
  std::vector<std::pair<Value, Value>> extra_keywords;
  Value call_caller = caller;
  for (const auto& [name, value] : args.keywords) {
    const std::string& key = name;  // a structured binding cannot be captured before C++20 (clang refuses)
    const auto it =
        std::find_if(macro.params.begin(), macro.params.end(), [&](const MacroParam& p) { return p.name == key; });
    if (it == macro.params.end()) {
      if (name == "caller" && macro.uses_caller)
        call_caller = value;
      else if (macro.uses_kwargs)
        extra_keywords.emplace_back(Value(name), value);
      else
        throw Fault("macro '" + macro.text + "' takes no keyword argument '" + name + "'");
      continue;
    }
    if (f->vars.count(name)) throw Fault("macro '" + macro.text + "' got multiple values for argument '" + name + "'");
    f->vars[name] = value;
  }
  for (const auto& p : macro.params) {
    if (f->vars.count(p.name)) continue;
    f->vars[p.name] =
        p.default_value ? eval(*p.default_value, f) : Value::undefined("parameter '" + p.name + "' was not provided");
  }
  if (macro.uses_varargs) f->vars["varargs"] = make_list(std::move(extra_positional), true);
  if (macro.uses_kwargs) f->vars["kwargs"] = make_dict(std::move(extra_keywords));
  if (macro.uses_caller) f->vars["caller"] = call_caller;
  return Value(capture(macro.body, f));
}

Value Renderer::lookup(const std::string& name, const Frame& frame) const {
  const Value* v = frame.find(name);
  return v ? *v : Value::undefined("'" + name + "' is undefined");
}

Value Renderer::eval(const Expr& e, const std::shared_ptr<Frame>& frame) {
  try {
    return eval_inner(e, frame);
  } catch (const TemplateError&) {
    throw;
  } catch (const std::exception& ex) {
    fail_at(e.line, e.column, ex.what());
  }
}

Args Renderer::eval_args(const Expr& e, const std::shared_ptr<Frame>& frame) {
  Args args;
  for (const auto& item : e.items) args.positional.push_back(eval(*item, frame));
  for (const auto& k : e.kwargs) args.keywords.emplace_back(k.name, eval(*k.value, frame));
  if (e.dyn_args)
    for (auto& v : iterate(eval(*e.dyn_args, frame))) args.positional.push_back(std::move(v));
  if (e.dyn_kwargs) {
    const Value d = eval(*e.dyn_kwargs, frame);
    if (!d.is_dict()) throw Fault("argument after ** must be a mapping, not " + type_name(d));
    for (const auto& [k, v] : d.dict().entries) args.keywords.emplace_back(to_str(k), v);
  }
  return args;
}

Value Renderer::eval_call(const Expr& e, const std::shared_ptr<Frame>& frame, const Value* caller) {
  const Value callee = eval(*e.a, frame);
  Args args = eval_args(e, frame);
  if (caller) args.keywords.emplace_back("caller", *caller);
  try {
    switch (callee.kind()) {
      case Value::Kind::Callable:
        return callee.callable_fn().call(*this, args);
      case Value::Kind::Object:
        if (callee.object().callable()) return callee.object().call(*this, args);
        break;
      case Value::Kind::Undefined:
        fail_undefined(callee);
      default:
        break;
    }
  } catch (const TemplateError&) {
    throw;
  } catch (const std::exception& ex) {
    fail_at(e.line, e.column, ex.what());
  }
  throw Fault("'" + type_name(callee) + "' object is not callable");
}

Value Renderer::eval_filter(const Expr& e, const std::shared_ptr<Frame>& frame, const Value* block_input) {
  const Value input =
      e.a ? (e.a->kind == Expr::Kind::Filter ? eval_filter(*e.a, frame, block_input) : eval(*e.a, frame))
          : *block_input;
  const Args args = eval_args(e, frame);
  try {
    return apply_filter(e.name, input, args);
  } catch (const TemplateError&) {
    throw;
  } catch (const std::exception& ex) {
    fail_at(e.line, e.column, ex.what());
  }
}

Value Renderer::eval_compare(const Expr& e, const std::shared_ptr<Frame>& frame) {
  Value left = eval(*e.a, frame);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i], frame);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==")
      ok = equals(left, right);
    else if (op == "!=")
      ok = !equals(left, right);
    else if (op == "<")
      ok = less(left, right, "<");
    else if (op == ">")
      ok = less(right, left, ">");
    else if (op == "<=")
      ok = !less(right, left, "<=");
    else if (op == ">=")
      ok = !less(left, right, ">=");
    else if (op == "in")
      ok = contains(right, left);
    else
      ok = !contains(right, left);
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Renderer::eval_inner(const Expr& e, const std::shared_ptr<Frame>& frame) {
  switch (e.kind) {
    case Expr::Kind::Literal:
      return e.literal;
    case Expr::Kind::Name:
      return lookup(e.name, *frame);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<Value> items;
      for (const auto& item : e.items) items.push_back(eval(*item, frame));
      return make_list(std::move(items), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      auto d = std::make_shared<DictData>();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) d->set(eval(*e.items[i], frame), eval(*e.items[i + 1], frame));
      return Value(std::move(d));
    }
    case Expr::Kind::Getattr: {
      const Value obj = eval(*e.a, frame);
      if (obj.is_undefined()) fail_undefined(obj);
      return get_attribute(obj, e.name);
    }
    case Expr::Kind::Getitem: {
      const Value obj = eval(*e.a, frame);
      if (obj.is_undefined()) fail_undefined(obj);
      if (e.b->kind == Expr::Kind::Slice) {
        std::optional<int64_t> bounds[3];
        for (int i = 0; i < 3; ++i)
          if (e.b->items[static_cast<size_t>(i)])
            bounds[i] = slice_bound(eval(*e.b->items[static_cast<size_t>(i)], frame));
        return get_slice(obj, bounds[0], bounds[1], bounds[2]);
      }
      return get_item(obj, eval(*e.b, frame));
    }
    case Expr::Kind::Slice:
      throw Fault("a slice outside of a subscript");
    case Expr::Kind::Call:
      return eval_call(e, frame);
    case Expr::Kind::Filter:
      return eval_filter(e, frame, nullptr);
    case Expr::Kind::Test: {
      const Value input = eval(*e.a, frame);
      return Value(apply_test(e.name, input, eval_args(e, frame)));
    }
    case Expr::Kind::Neg:
    case Expr::Kind::Pos: {
      const Value v = eval(*e.a, frame);
      if (v.is_undefined()) fail_undefined(v);
      const bool neg = e.kind == Expr::Kind::Neg;
      if (v.is_float()) return Value(neg ? -v.as_float() : v.as_float());
      if (v.is_int() || v.is_bool()) {
        if (neg && v.as_int() == INT64_MIN) throw Fault("integer overflow: the result of '-' does not fit in 64 bits");
        return Value(neg ? -v.as_int() : v.as_int());
      }
      throw Fault(std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" + type_name(v) + "'");
    }
    case Expr::Kind::Not:
      return Value(!truthy(eval(*e.a, frame)));
    case Expr::Kind::And: {
      Value left = eval(*e.a, frame);
      return truthy(left) ? eval(*e.b, frame) : left;
    }
    case Expr::Kind::Or: {
      Value left = eval(*e.a, frame);
      return truthy(left) ? left : eval(*e.b, frame);
    }
    case Expr::Kind::Binary: {
      const Value left = eval(*e.a, frame);
      return binary(e.name, left, eval(*e.b, frame));
    }
    case Expr::Kind::Compare:
      return eval_compare(e, frame);
    case Expr::Kind::Concat: {
      std::string text;
      for (const auto& item : e.items) {
        const std::string part = to_str(eval(*item, frame));
        check_text_size(uint64_t(text.size()) + part.size(), "the string '~' makes");
        text += part;
      }
      return Value(std::move(text));
    }
    case Expr::Kind::CondExpr:
      if (truthy(eval(*e.a, frame))) return eval(*e.b, frame);
      if (e.c) return eval(*e.c, frame);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value();
}

}  // namespace tb::text::jinja::detail
