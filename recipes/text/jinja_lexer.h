// Jinja's lexer as jinja2 runs it for transformers: trim_blocks and lstrip_blocks on, `-`/`+` whitespace
// control on every tag, comments and {% raw %} resolved here, so the parser sees text and tag tokens and
// the rendered output never has to be trimmed afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb::text::jinja::detail {

struct Token {
  enum class Type {
    Data,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Integer,
    Float,
    Operator,
    Eof
  };
  Type type = Type::Eof;
  std::string text;  // data, name, operator, or the decoded string literal
  int64_t integer = 0;
  double floating = 0.0;
  int line = 1, column = 1;
};

// Throws TemplateError (named `name`) for malformed input: an unclosed comment, tag or raw block, an
// unexpected character, unbalanced brackets.
std::vector<Token> tokenize(const std::string& source, const std::string& name);

}  // namespace tb::text::jinja::detail
