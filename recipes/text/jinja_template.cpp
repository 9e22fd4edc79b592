// The public face of the interpreter (jinja.h): Template, TemplateError and render_chat.
#include "text/jinja.h"

#include "text/jinja_ast.h"
#include "text/jinja_eval.h"

namespace tb::text::jinja {

namespace detail {
struct Program;
}

TemplateError::TemplateError(std::string name, int line, int column, std::string message)
    : std::runtime_error(name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message),
      name_(std::move(name)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

Template::Template(const std::string& source, std::string name)
    : program_(detail::parse_template(source, name)), name_(std::move(name)) {}

Template::~Template() = default;
Template::Template(const Template&) = default;
Template& Template::operator=(const Template&) = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Json& context, RenderObserver* observer) const {
  if (!context.is_object() && !context.is_null())
    throw std::invalid_argument("the render context must be a JSON object");
  std::vector<std::pair<std::string, const Json*>> variables;
  if (context.is_object())
    for (auto it = context.begin(); it != context.end(); ++it) variables.emplace_back(it.key(), &*it);
  return detail::Renderer(*program_, observer).render(variables);
}

bool Template::has_generation_blocks() const { return program_->has_generation; }

std::string render_chat(const Template& tmpl, const ChatRenderInputs& inputs, RenderObserver* observer) {
  // transformers: render(messages=..., tools=..., documents=..., add_generation_prompt=..., **kwargs), where
  // kwargs holds the special tokens and the caller's template kwargs; tools and documents are passed as
  // None when not given. The variables point at `inputs` itself, so the observer's nodes do too.
  if (!inputs.extra.is_null() && !inputs.extra.is_object())
    throw std::invalid_argument("render_chat: extra must be a JSON object");
  const Json add_generation_prompt(inputs.add_generation_prompt);
  std::vector<std::pair<std::string, const Json*>> variables = {{"messages", &inputs.messages},
                                                                {"tools", &inputs.tools},
                                                                {"documents", &inputs.documents},
                                                                {"add_generation_prompt", &add_generation_prompt}};
  if (inputs.extra.is_object()) {
    for (auto it = inputs.extra.begin(); it != inputs.extra.end(); ++it) {
      for (const auto& [name, node] : variables)
        if (name == it.key())
          throw std::invalid_argument("render_chat: extra names '" + it.key() + "', an argument of its own");
      variables.emplace_back(it.key(), &*it);
    }
  }
  return detail::Renderer(*tmpl.program_, observer).render(variables);
}

}  // namespace tb::text::jinja
