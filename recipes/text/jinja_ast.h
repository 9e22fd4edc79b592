// The parsed template: expressions and statements as jinja2's parser builds them (jinja2.nodes), each with
// the line and column of the token it starts at, for errors raised while rendering.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace tb::text::jinja::detail {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    Literal,   // literal
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key, value, key, value, ...
    Getattr,   // a.name
    Getitem,   // a[b]
    Slice,     // items: start, stop, step (each may be null); only as the b of a Getitem
    Call,      // a(items..., kwargs..., *dyn_args, **dyn_kwargs)
    Filter,    // a | name(items..., kwargs...); a is null in {% filter %} and {% set x | f %} blocks
    Test,      // a is name(items..., kwargs...)
    Neg,       // -a
    Pos,       // +a
    Not,       // not a
    And,       // a and b
    Or,        // a or b
    Binary,    // a name b, name one of + - * / // % **
    Compare,   // a ops[0] items[0] ops[1] items[1] ... (==, !=, <, <=, >, >=, in, notin)
    Concat,    // items joined with ~
    CondExpr,  // b if a else c (c may be null)
  };
  Kind kind;
  int line = 1, column = 1;
  Value literal;
  std::string name;
  std::vector<ExprPtr> items;
  std::vector<Keyword> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
  std::vector<std::string> ops;
  ExprPtr a, b, c;
  int depth = 1;  // levels below and including this node (the parser bounds it: evaluation recurses on it)
};

// What {% set %}, {% for %} and {% with %} assign to: a name, a tuple of names, or a namespace attribute.
struct Target {
  enum class Kind { Name, Tuple, NamespaceAttr };
  Kind kind = Kind::Name;
  std::vector<std::string> names;  // Name: one; Tuple: several; NamespaceAttr: the namespace's name
  std::string attr;
  int line = 1, column = 1;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    Text,         // text
    Print,        // {{ expr }}
    If,           // branches (test, body) ...; else_body
    For,          // target in expr [if filter] body [else else_body]
    Set,          // target = expr
    SetBlock,     // {% set target [| filter] %} body {% endset %}; filter chain in expr (input null)
    Macro,        // macro name(params) body
    CallBlock,    // {% call[(params)] expr %} body
    FilterBlock,  // {% filter chain %} body; chain in expr (input null)
    With,         // {% with assigns %} body
    Block,        // {% block name %} body: rendered in place
    Break,
    Continue,
    Generation,  // {% generation %} body
  };
  Kind kind;
  int line = 1, column = 1;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  // For: the `if` condition
  bool recursive = false;
  Target target;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  std::vector<MacroParam> params;
  std::vector<std::pair<Target, ExprPtr>> assigns;
  // Macro: whether its body names varargs, kwargs, caller (jinja2 accepts extra arguments only then).
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
};

struct Program {
  std::string name;
  Body body;
  bool has_generation = false;
};

// Parses a template; throws TemplateError for syntax errors, unknown tags, filters and tests.
std::shared_ptr<Program> parse_template(const std::string& source, const std::string& name);

}  // namespace tb::text::jinja::detail
