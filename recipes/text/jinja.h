// A Jinja interpreter for Hugging Face chat templates: the language as jinja2 renders it under
// transformers' apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, the {% generation %} tag, transformers' tojson, raise_exception, strftime_now).
// Values behave as Python's do (printing, truthiness, integer/float arithmetic, dict order).
//
// Contexts are nlohmann::ordered_json: a Python dict keeps its keys in insertion order and templates
// print that order (tojson of tools and tool-call arguments, items()), so the key order of the input
// is part of the output. Parse datasets with nlohmann::ordered_json::parse to keep it.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tb::text::jinja {

using Json = nlohmann::ordered_json;

// A template error: what() is "<name>:<line>:<column>: <message>" (1-based; line/column of the offending
// token or tag, also for errors raised while rendering, including raise_exception's message).
class TemplateError : public std::runtime_error {
 public:
  TemplateError(std::string name, int line, int column, std::string message);
  const std::string& name() const { return name_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string name_;
  int line_;
  int column_;
  std::string message_;
};

// Told where output came from while rendering. A for loop is observed when, after its `if` filter, at
// least one of its items is an object or array that IS (identity, not equality) a node of the render
// context: also when reached through a slice (messages[1:]), a filter that keeps elements (selectattr,
// reject, reverse, list, sort, first/last, ...), a variable alias ({% set loop_messages = messages %}) or
// a namespace attribute. An observed loop reports on_loop_begin, then on_loop_item for every iteration
// (node is nullptr for an item that is not a context node, e.g. a dict the template built), then
// on_loop_end: the calls nest like brackets, so nested loops (tool calls inside a message) can be told
// apart. Only output written straight to the result is reported: loops and generation blocks inside a
// macro body, {% set %}...{% endset %} or {% filter %} report nothing.
struct RenderObserver {
  virtual ~RenderObserver() = default;
  // Before the first iteration of an observed loop.
  virtual void on_loop_begin(size_t output_offset) { (void)output_offset; }
  // Before the body of an iteration runs; `node` points into the context json passed to render()
  // (or is nullptr, see above); `output_offset` is the number of bytes written so far.
  virtual void on_loop_item(const Json* node, size_t output_offset) = 0;
  // After the loop's last iteration (or its break), with the output size then.
  virtual void on_loop_end(size_t output_offset) { (void)output_offset; }
  // {% generation %} ... {% endgeneration %} (transformers' extension marking assistant text): byte range
  // of its output.
  virtual void on_generation(size_t begin_offset, size_t end_offset) {
    (void)begin_offset;
    (void)end_offset;
  }
};

namespace detail {
struct Program;
}
struct ChatRenderInputs;

class Template {
 public:
  // Parses; throws TemplateError for syntax errors. `name` prefixes error messages (e.g.
  // "tokenizer_config.json chat_template").
  explicit Template(const std::string& source, std::string name = "chat_template");
  ~Template();
  Template(const Template&);
  Template& operator=(const Template&);
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with the variables of `context` (a JSON object). The output only ever grows (whitespace
  // control is a parse-time matter), so offsets given to the observer stay valid.
  std::string render(const Json& context, RenderObserver* observer = nullptr) const;
  bool has_generation_blocks() const;
  const std::string& name() const { return name_; }

 private:
  friend std::string render_chat(const Template&, const ChatRenderInputs&, RenderObserver*);
  std::shared_ptr<const detail::Program> program_;
  std::string name_;
};

// transformers' apply_chat_template(tokenize=False): the context it builds (messages, tools and documents,
// None when not given as transformers passes them, add_generation_prompt, the special tokens
// bos_token/eos_token/... passed in `extra`, and every other kwarg in `extra`, e.g. enable_thinking) and
// its globals raise_exception(msg) and strftime_now(fmt).
struct ChatRenderInputs {
  Json messages = Json::array();
  Json tools;      // null: not passed (the template sees None)
  Json documents;  // null: not passed (the template sees None)
  bool add_generation_prompt = false;
  Json extra = Json::object();  // bos_token, eos_token, enable_thinking, ...
};
// Throws std::invalid_argument when `extra` names one of the arguments above (transformers raises a
// TypeError for such a duplicate keyword), TemplateError for what the template raises.
std::string render_chat(const Template& tmpl, const ChatRenderInputs& inputs, RenderObserver* observer = nullptr);

}  // namespace tb::text::jinja
