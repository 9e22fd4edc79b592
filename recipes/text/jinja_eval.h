// Renders a parsed template: statements write to the output (or to a capture, for macros, {% set %}
// blocks and {% filter %}), expressions evaluate to values, variables resolve through frames as jinja2
// scopes them (a for body and a macro have frames of their own, if blocks do not).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/jinja_ast.h"
#include "text/jinja_builtins.h"

namespace tb::text::jinja::detail {

struct Frame {
  std::shared_ptr<Frame> parent;
  std::unordered_map<std::string, Value> vars;
  const Value* find(const std::string& name) const;
};

class Renderer {
 public:
  Renderer(const Program& program, RenderObserver* observer);
  // Empties every namespace this render made: one set into itself (`{% set ns.a = ns %}`), directly or
  // through a list, is a cycle of shared pointers that would outlive the render.
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  // namespace() made `ns` in this render.
  void adopt(const std::shared_ptr<NamespaceData>& ns) { namespaces_.push_back(ns); }
  // Renders with these variables; the observer's node pointers point into them.
  std::string render(const std::vector<std::pair<std::string, const Json*>>& variables);

  // Used by macros, caller() and recursive loops: renders `body` in `frame` into a string of its own.
  std::string capture(const Body& body, const std::shared_ptr<Frame>& frame);
  Value call_macro(const Stmt& macro, const std::shared_ptr<Frame>& defined_in, Args& args, const Value& caller);
  std::string run_loop(const Stmt& loop, const std::shared_ptr<Frame>& frame, const Value& iterable, int depth);

 private:
  enum class Flow { Normal, Break, Continue };
  std::string& out() { return buffers_.back(); }
  void emit(const std::string& text);  // appends to out(), bounded (check_text_size)
  bool observed() const { return observer_ && buffers_.size() == 1; }

  Flow exec(const Body& body, const std::shared_ptr<Frame>& frame);
  Flow exec_stmt(const Stmt& s, const std::shared_ptr<Frame>& frame);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Frame>& frame, const Value& iterable, int depth);
  void assign(const Target& target, const Value& value, Frame& frame);

  Value eval(const Expr& e, const std::shared_ptr<Frame>& frame);
  Value eval_inner(const Expr& e, const std::shared_ptr<Frame>& frame);
  Value eval_call(const Expr& e, const std::shared_ptr<Frame>& frame, const Value* caller = nullptr);
  Args eval_args(const Expr& e, const std::shared_ptr<Frame>& frame);
  Value eval_filter(const Expr& e, const std::shared_ptr<Frame>& frame, const Value* block_input);
  Value eval_compare(const Expr& e, const std::shared_ptr<Frame>& frame);
  Value lookup(const std::string& name, const Frame& frame) const;
  [[noreturn]] void fail_at(int line, int column, const std::string& message) const;

  const Program& program_;
  RenderObserver* observer_;
  std::vector<std::string> buffers_;
  int call_depth_ = 0;  // macro calls and recursive loop calls in progress
  int64_t loop_iterations_ = 0;  // of every for loop in this render, against its budget
  std::vector<std::weak_ptr<NamespaceData>> namespaces_;
};

}  // namespace tb::text::jinja::detail
