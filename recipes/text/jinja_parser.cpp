// Jinja's grammar as jinja2's parser reads it (jinja2/parser.py): statements, then expressions by
// precedence: conditional, or, and, not, comparisons, + -, ~, * / // %, **, unary, postfix, filters/tests.
#include <algorithm>
#include <cstring>
#include <set>

#include "text/jinja.h"
#include "text/jinja_ast.h"
#include "text/jinja_builtins.h"
#include "text/jinja_lexer.h"

namespace tb::text::jinja::detail {
namespace {

using TT = Token::Type;

std::string describe(const Token& t) {
  switch (t.type) {
    case TT::Eof:
      return "end of template";
    case TT::BlockEnd:
      return "end of statement block";
    case TT::VariableEnd:
      return "end of print statement";
    case TT::BlockBegin:
      return "begin of statement block";
    case TT::VariableBegin:
      return "begin of print statement";
    case TT::Data:
      return "template data";
    case TT::String:
      return "string";
    case TT::Integer:
      return "integer";
    case TT::Float:
      return "float";
    default:
      return t.text;
  }
}

class Parser {
 public:
  Parser(const std::string& source, const std::string& name) : name_(name), tokens_(tokenize(source, name)) {}

  std::shared_ptr<Program> run() {
    auto program = std::make_shared<Program>();
    program->name = name_;
    program->body = subparse({});
    if (cur().type != TT::Eof) fail(cur(), "unexpected " + describe(cur()));
    program->has_generation = has_generation_;
    return program;
  }

 private:
  // Token stream ---------------------------------------------------------------------------------------
  const Token& cur() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == TT::Operator && cur().text == op; }
  bool is_name(const char* word) const { return cur().type == TT::Name && cur().text == word; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* word) {
    if (!is_name(word)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    throw TemplateError(name_, at.line, at.column, message);
  }

  // Blocks and expressions are parsed by recursion, so a template that nests them thousands deep would
  // overflow the stack (fuzzing found `{{{{...`); real chat templates nest a handful of levels.
  static constexpr int kMaxNesting = 100;
  struct Nested {
    Parser& parser;
    Nested(Parser& p, const Token& at) : parser(p) {
      if (++parser.nesting_ > kMaxNesting) {
        --parser.nesting_;
        parser.fail(at, "blocks or expressions nested more than " + std::to_string(kMaxNesting) + " levels deep");
      }
    }
    ~Nested() { --parser.nesting_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;
  };
  // Chains are parsed by loops, not recursion, so the nesting bound above does not see them; evaluating
  // (and freeing) the tree they build recurses all the same: `{{ 1|string|string…(50,000x) }}`, `1 + 1 + …`,
  // `.x.x…`, `f(1)(1)…` overflowed the stack. Each node knows its depth; a tree deeper than this is refused.
  static constexpr int kMaxExprDepth = 256;
  ExprPtr deepened(ExprPtr e, const Token& at) const {
    int deepest = 0;
    auto see = [&](const ExprPtr& child) {
      if (child) deepest = std::max(deepest, child->depth);
    };
    for (const ExprPtr* p : {&e->a, &e->b, &e->c, &e->dyn_args, &e->dyn_kwargs}) see(*p);
    for (const auto& item : e->items) see(item);
    for (const auto& kw : e->kwargs) see(kw.value);
    e->depth = deepest + 1;
    if (e->depth > kMaxExprDepth)
      fail(at, "an expression nested more than " + std::to_string(kMaxExprDepth) +
                   " levels deep (a chain of operators, filters, calls or attributes)");
    return e;
  }
  const Token& expect(TT type, const char* what) {
    if (cur().type != type) fail(cur(), std::string("expected token '") + what + "', got '" + describe(cur()) + "'");
    return next();
  }
  const Token& expect_op(const char* op) {
    if (!is_op(op)) fail(cur(), std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
    return next();
  }
  const Token& expect_name(const char* word = nullptr) {
    if (cur().type != TT::Name || (word && cur().text != word))
      fail(cur(), std::string("expected token '") + (word ? word : "name") + "', got '" + describe(cur()) + "'");
    return next();
  }

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  std::unique_ptr<Stmt> stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // Statements -----------------------------------------------------------------------------------------
  // Parses until a block tag whose name is one of `end_tokens` (left as the current token).
  Body subparse(const std::vector<std::string>& end_tokens) {
    const Nested nested(*this, cur());
    Body body;
    while (cur().type != TT::Eof) {
      const Token& t = cur();
      if (t.type == TT::Data) {
        auto s = stmt(Stmt::Kind::Text, t);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TT::VariableBegin) {
        next();
        auto s = stmt(Stmt::Kind::Print, cur());
        s->expr = parse_tuple(false, true, {}, false);
        expect(TT::VariableEnd, "end of print statement");
        body.push_back(std::move(s));
      } else if (t.type == TT::BlockBegin) {
        next();
        if (cur().type == TT::Name)
          for (const auto& end : end_tokens)
            if (cur().text == end) return body;
        body.push_back(parse_statement(end_tokens));
        expect(TT::BlockEnd, "end of statement block");
      } else {
        fail(t, "unexpected " + describe(t));
      }
    }
    return body;
  }

  Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
    skip_op(":");
    expect(TT::BlockEnd, "end of statement block");
    Body body = subparse(end_tokens);
    if (cur().type == TT::Eof) {
      std::string wanted;
      for (size_t i = 0; i < end_tokens.size(); ++i) wanted += (i ? " or '" : "'") + end_tokens[i] + "'";
      fail(cur(), "Unexpected end of template. Jinja was looking for the following tags: " + wanted +
                      ". The innermost block that needs to be closed is '" + tag_stack_.back() + "'.");
    }
    if (drop_needle) next();
    return body;
  }

  std::unique_ptr<Stmt> parse_statement(const std::vector<std::string>& open_ends) {
    const Token& t = cur();
    if (t.type != TT::Name) fail(t, "tag name expected");
    const std::string tag = t.text;
    tag_stack_.push_back(tag);
    std::unique_ptr<Stmt> s;
    const int saved_soft = soft_;
    if (tag == "if") {
      s = parse_if();
    } else if (tag == "for") {
      soft_ = 0;
      s = parse_for();
    } else if (tag == "set") {
      s = parse_set();
    } else if (tag == "macro") {
      soft_ = 0;
      s = parse_macro();
    } else if (tag == "call") {
      soft_ = 0;
      s = parse_call_block();
    } else if (tag == "filter") {
      soft_ = 0;
      s = parse_filter_block();
    } else if (tag == "with") {
      s = parse_with();
    } else if (tag == "block") {
      s = stmt(Stmt::Kind::Block, next());
      s->text = expect_name().text;
      skip_name("scoped");
      s->body = parse_statements({"endblock"}, true);
      if (cur().type == TT::Name) next();  // {% endblock name %}
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(t, "'" + tag + "' is only allowed inside a for loop");
      s = stmt(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, next());
    } else if (tag == "generation") {
      s = stmt(Stmt::Kind::Generation, next());
      has_generation_ = true;
      s->body = parse_statements({"endgeneration"}, true);
    } else if (tag == "extends" || tag == "include" || tag == "import" || tag == "from") {
      fail(t, "'" + tag + "' needs a template loader, which chat templates do not have");
    } else {
      tag_stack_.pop_back();
      std::string message = "Encountered unknown tag '" + tag + "'.";
      if (!open_ends.empty()) {
        message += " Jinja was looking for the following tags: ";
        for (size_t i = 0; i < open_ends.size(); ++i) message += (i ? " or '" : "'") + open_ends[i] + "'";
        message += ". The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
      }
      fail(t, message);
    }
    soft_ = saved_soft;
    tag_stack_.pop_back();
    return s;
  }

  std::unique_ptr<Stmt> parse_if() {
    auto s = stmt(Stmt::Kind::If, expect_name("if"));
    ++soft_;
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const std::string token = next().text;
      if (token == "elif") continue;
      if (token == "else") s->else_body = parse_statements({"endif"}, true);
      break;
    }
    --soft_;
    return s;
  }

  std::unique_ptr<Stmt> parse_for() {
    auto s = stmt(Stmt::Kind::For, expect_name("for"));
    s->target = parse_assign_target({"in"}, false);
    expect_name("in");
    s->expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().text == "else") {
      const int saved = loop_depth_;
      loop_depth_ = 0;  // break/continue in the else branch belong to no loop of this one
      s->else_body = parse_statements({"endfor"}, true);
      loop_depth_ = saved;
    }
    return s;
  }

  std::unique_ptr<Stmt> parse_set() {
    const Token& at = expect_name("set");
    Target target = parse_assign_target({}, true);
    if (skip_op("=")) {
      auto s = stmt(Stmt::Kind::Set, at);
      s->target = std::move(target);
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    auto s = stmt(Stmt::Kind::SetBlock, at);
    s->target = std::move(target);
    const int saved = soft_;
    soft_ = 0;
    if (is_op("|")) s->expr = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    soft_ = saved;
    return s;
  }

  void parse_signature(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      MacroParam p;
      p.name = expect_name().text;
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
      } else if (!params.empty() && params.back().default_value) {
        fail(cur(), "non-default argument follows default argument");
      }
      params.push_back(std::move(p));
    }
    expect_op(")");
  }

  std::unique_ptr<Stmt> parse_macro() {
    auto s = stmt(Stmt::Kind::Macro, expect_name("macro"));
    s->text = expect_name().text;
    parse_signature(s->params);
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved;
    std::set<std::string> names;
    for (const auto& b : s->body) collect_names(*b, names);
    for (const auto& p : s->params)
      if (p.default_value) collect_names(*p.default_value, names);
    s->uses_varargs = names.count("varargs") > 0;
    s->uses_kwargs = names.count("kwargs") > 0;
    s->uses_caller = names.count("caller") > 0;
    return s;
  }

  static void collect_names(const Expr& e, std::set<std::string>& names) {
    if (e.kind == Expr::Kind::Name) names.insert(e.name);
    for (const ExprPtr* p : {&e.a, &e.b, &e.c, &e.dyn_args, &e.dyn_kwargs})
      if (*p) collect_names(**p, names);
    for (const auto& item : e.items)
      if (item) collect_names(*item, names);
    for (const auto& k : e.kwargs) collect_names(*k.value, names);
  }

  static void collect_names(const Stmt& s, std::set<std::string>& names) {
    for (const ExprPtr* p : {&s.expr, &s.filter})
      if (*p) collect_names(**p, names);
    for (const auto& [test, body] : s.branches) {
      collect_names(*test, names);
      for (const auto& b : body) collect_names(*b, names);
    }
    for (const Body* body : {&s.body, &s.else_body})
      for (const auto& b : *body) collect_names(*b, names);
    for (const auto& p : s.params)
      if (p.default_value) collect_names(*p.default_value, names);
    for (const auto& [target, value] : s.assigns) collect_names(*value, names);
  }

  std::unique_ptr<Stmt> parse_call_block() {
    auto s = stmt(Stmt::Kind::CallBlock, expect_name("call"));
    if (is_op("(")) parse_signature(s->params);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::Call) fail(cur(), "expected call");
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endcall"}, true);
    loop_depth_ = saved;
    return s;
  }

  std::unique_ptr<Stmt> parse_filter_block() {
    auto s = stmt(Stmt::Kind::FilterBlock, expect_name("filter"));
    s->expr = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  std::unique_ptr<Stmt> parse_with() {
    auto s = stmt(Stmt::Kind::With, expect_name("with"));
    while (cur().type != TT::BlockEnd) {
      if (!s->assigns.empty()) expect_op(",");
      Target target = parse_assign_target({}, false);
      expect_op("=");
      s->assigns.emplace_back(std::move(target), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  Target parse_assign_target(const std::vector<std::string>& extra_end, bool with_namespace) {
    Target target;
    target.line = cur().line;
    target.column = cur().column;
    if (with_namespace && cur().type == TT::Name && look().type == TT::Operator && look().text == ".") {
      target.kind = Target::Kind::NamespaceAttr;
      target.names.push_back(next().text);
      next();
      target.attr = expect_name().text;
      return target;
    }
    const bool parens = skip_op("(");
    while (true) {
      if (!target.names.empty()) {
        if (!skip_op(",")) break;
        target.kind = Target::Kind::Tuple;
      }
      if (tuple_end(extra_end) || (parens && is_op(")"))) break;
      if (cur().type != TT::Name) fail(cur(), "can't assign to " + describe(cur()));
      const std::string name = next().text;
      if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None")
        fail(cur(), "can't assign to const");
      target.names.push_back(name);
    }
    if (parens) {
      expect_op(")");
      target.kind = Target::Kind::Tuple;
    }
    if (target.names.empty()) fail(cur(), "Expected an expression, got '" + describe(cur()) + "'");
    return target;
  }

  // Expressions ----------------------------------------------------------------------------------------
  bool tuple_end(const std::vector<std::string>& extra_end) const {
    const Token& t = cur();
    if (t.type == TT::VariableEnd || t.type == TT::BlockEnd || t.type == TT::Eof) return true;
    if (t.type == TT::Operator && t.text == ")") return true;
    if (t.type == TT::Name)
      for (const auto& e : extra_end)
        if (t.text == e) return true;
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                      bool explicit_parentheses) {
    const Token& at = cur();
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) fail(cur(), "Expected an expression, got '" + describe(cur()) + "'");
    }
    auto e = node(Expr::Kind::Tuple, at);
    e->items = std::move(args);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    const Token* at = &cur();
    ExprPtr expr1 = parse_or();
    while (is_name("if")) {
      next();
      ++soft_;
      auto e = node(Expr::Kind::CondExpr, *at);
      e->a = parse_or();
      e->b = std::move(expr1);
      if (skip_name("else")) e->c = parse_condexpr();
      --soft_;
      expr1 = deepened(std::move(e), *at);
      at = &cur();
    }
    return expr1;
  }

  ExprPtr binary_node(Expr::Kind kind, const Token& at, ExprPtr left, ExprPtr right, std::string op = {}) {
    auto e = node(kind, at);
    e->a = std::move(left);
    e->b = std::move(right);
    e->name = std::move(op);
    return deepened(std::move(e), at);
  }

  // Binary operations take the position of their operator: the token an error in them points at.
  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const Token& op = next();
      left = binary_node(Expr::Kind::Or, op, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const Token& op = next();
      left = binary_node(Expr::Kind::And, op, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Nested nested(*this, cur());
      const Token& at = next();
      auto e = node(Expr::Kind::Not, at);
      e->a = parse_not();
      return deepened(std::move(e), at);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr expr = parse_math1();
    const Token& at = cur();
    std::vector<std::string> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      static const std::set<std::string> compare_ops = {"==", "!=", "<", "<=", ">", ">="};
      if (cur().type == TT::Operator && compare_ops.count(cur().text)) {
        ops.push_back(next().text);
      } else if (skip_name("in")) {
        ops.push_back("in");
      } else if (is_name("not") && look().type == TT::Name && look().text == "in") {
        next();
        next();
        ops.push_back("notin");
      } else {
        break;
      }
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return expr;
    auto e = node(Expr::Kind::Compare, at);
    e->a = std::move(expr);
    e->ops = std::move(ops);
    e->items = std::move(operands);
    return deepened(std::move(e), at);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      left = binary_node(Expr::Kind::Binary, op, std::move(left), parse_concat(), op.text);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& at = cur();
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = node(Expr::Kind::Concat, at);
    e->items.push_back(std::move(first));
    while (skip_op("~")) e->items.push_back(parse_math2());
    return deepened(std::move(e), at);
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      left = binary_node(Expr::Kind::Binary, op, std::move(left), parse_pow(), op.text);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& op = next();
      left = binary_node(Expr::Kind::Binary, op, std::move(left), parse_unary(true), "**");
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Nested nested(*this, cur());
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& at = next();
      e = node(at.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, at);
      e->a = parse_unary(false);
      e = deepened(std::move(e), at);
    } else {
      const Token& at = cur();
      e = deepened(parse_primary(), at);
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    ExprPtr e;
    if (t.type == TT::Name) {
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        e = node(Expr::Kind::Literal, t);
        e->literal = Value(t.text == "true" || t.text == "True");
      } else if (t.text == "none" || t.text == "None") {
        e = node(Expr::Kind::Literal, t);
        e->literal = Value::none();
      } else {
        e = node(Expr::Kind::Name, t);
        e->name = t.text;
      }
      next();
    } else if (t.type == TT::String) {
      e = node(Expr::Kind::Literal, t);
      std::string text;
      while (cur().type == TT::String) text += next().text;
      e->literal = Value(std::move(text));
    } else if (t.type == TT::Integer || t.type == TT::Float) {
      e = node(Expr::Kind::Literal, t);
      e->literal = t.type == TT::Integer ? Value(t.integer) : Value(t.floating);
      next();
    } else if (is_op("(")) {
      next();
      e = parse_tuple(false, true, {}, true);
      expect_op(")");
    } else if (is_op("[")) {
      e = node(Expr::Kind::List, next());
      while (!is_op("]")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("]")) break;
        e->items.push_back(parse_expression(true));
      }
      expect_op("]");
    } else if (is_op("{")) {
      e = node(Expr::Kind::Dict, next());
      while (!is_op("}")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("}")) break;
        e->items.push_back(parse_expression(true));
        expect_op(":");
        e->items.push_back(parse_expression(true));
      }
      expect_op("}");
    } else {
      fail(t, "unexpected '" + describe(t) + "'");
    }
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& at = cur();
      if (is_op(".") || is_op("[")) {
        e = deepened(parse_subscript(std::move(e)), at);
      } else if (is_op("(")) {
        e = deepened(parse_call(std::move(e)), at);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      const Token& at = cur();
      if (is_op("|")) {
        e = deepened(parse_filter(std::move(e), false), at);
      } else if (is_name("is")) {
        e = deepened(parse_test(std::move(e)), at);
      } else if (is_op("(")) {
        e = deepened(parse_call(std::move(e)), at);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token& at = next();
    if (at.text == ".") {
      const Token& attr = next();
      if (attr.type == TT::Name) {
        auto e = postfix_node(Expr::Kind::Getattr, *obj);
        e->a = std::move(obj);
        e->name = attr.text;
        return e;
      }
      if (attr.type != TT::Integer) fail(attr, "expected name or number");
      auto e = postfix_node(Expr::Kind::Getitem, *obj);
      e->a = std::move(obj);
      e->b = node(Expr::Kind::Literal, attr);
      e->b->literal = Value(attr.integer);
      return e;
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    auto e = postfix_node(Expr::Kind::Getitem, *obj);
    e->a = std::move(obj);
    if (args.size() == 1) {
      e->b = std::move(args[0]);
    } else {
      e->b = node(Expr::Kind::Tuple, at);
      e->b->items = std::move(args);
    }
    return e;
  }

  ExprPtr parse_subscribed() {
    const Token& at = cur();
    std::vector<ExprPtr> parts;
    if (skip_op(":")) {
      parts.push_back(nullptr);
    } else {
      ExprPtr first = parse_expression(true);
      if (!skip_op(":")) return first;
      parts.push_back(std::move(first));
    }
    auto slice_end = [&] { return is_op("]") || is_op(","); };
    if (is_op(":") || slice_end())
      parts.push_back(nullptr);
    else
      parts.push_back(parse_expression(true));
    if (skip_op(":"))
      parts.push_back(slice_end() ? nullptr : parse_expression(true));
    else
      parts.push_back(nullptr);
    auto e = node(Expr::Kind::Slice, at);
    e->items = std::move(parts);
    return e;
  }

  void parse_call_args(Expr& e) {
    const Token& at = expect_op("(");
    bool require_comma = false;
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      auto ensure = [&](bool ok) {
        if (!ok) fail(at, "invalid syntax for function call expression");
      };
      if (skip_op("*")) {
        ensure(!e.dyn_args && !e.dyn_kwargs);
        e.dyn_args = parse_expression(true);
      } else if (skip_op("**")) {
        ensure(!e.dyn_kwargs);
        e.dyn_kwargs = parse_expression(true);
      } else if (cur().type == TT::Name && look().type == TT::Operator && look().text == "=") {
        ensure(!e.dyn_kwargs);
        Keyword k;
        k.name = next().text;
        next();
        k.value = parse_expression(true);
        e.kwargs.push_back(std::move(k));
      } else {
        ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
        e.items.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  // Postfix nodes (calls, attributes, items) take the position of the expression they apply to, so an
  // error in `messages[0].content.split()` points at `messages`.
  ExprPtr postfix_node(Expr::Kind kind, const Expr& base) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = base.line;
    e->column = base.column;
    return e;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = postfix_node(Expr::Kind::Call, *callee);
    e->a = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr input, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const Token& at = expect_name();
      auto e = node(Expr::Kind::Filter, at);
      e->name = at.text;
      while (skip_op(".")) e->name += "." + expect_name().text;
      if (!find_filter(e->name) && soft_ == 0) fail(at, "No filter named '" + e->name + "'.");
      if (is_op("(")) parse_call_args(*e);
      e->a = std::move(input);
      input = deepened(std::move(e), at);
    }
    return input;
  }

  ExprPtr parse_test(ExprPtr input) {
    const Token& at = next();  // is
    const bool negated = skip_name("not");
    const Token& name_token = expect_name();
    auto e = node(Expr::Kind::Test, at);
    e->name = name_token.text;
    while (skip_op(".")) e->name += "." + expect_name().text;
    if (!find_test(e->name) && soft_ == 0) fail(name_token, "No test named '" + e->name + "'.");
    const Token& t = cur();
    const bool arg_start = t.type == TT::Name || t.type == TT::String || t.type == TT::Integer || t.type == TT::Float ||
                           is_op("(") || is_op("[") || is_op("{");
    if (is_op("(")) {
      parse_call_args(*e);
    } else if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(t, "You cannot chain multiple tests with is");
      e->items.push_back(parse_postfix(parse_primary()));
    }
    e->a = std::move(input);
    if (!negated) return e;
    auto n = node(Expr::Kind::Not, at);
    n->a = std::move(e);
    return n;
  }

  const std::string& name_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::vector<std::string> tag_stack_;
  int soft_ = 0;  // inside an if test/body or conditional expression: unknown filters/tests fail at runtime
  int loop_depth_ = 0;
  int nesting_ = 0;  // blocks and expressions being parsed inside each other (see Nested)
  bool has_generation_ = false;
};

}  // namespace

std::shared_ptr<Program> parse_template(const std::string& source, const std::string& name) {
  return Parser(source, name).run();
}

}  // namespace tb::text::jinja::detail
