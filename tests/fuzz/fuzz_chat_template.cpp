// libFuzzer target: a chat template parsed and rendered with a small conversation, as a model folder's
// tokenizer_config.json would give it. Syntax and render errors are TemplateError; anything else
// escaping, a crash or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "text/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const tb::text::jinja::Template tmpl(source);
    tb::text::jinja::ChatRenderInputs inputs;
    inputs.messages = tb::text::jinja::Json::array(
        {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}},
         {{"role", "assistant"}, {"content", "Hello"}}, {{"role", "user"}, {"content", "More?"}}});
    inputs.add_generation_prompt = true;
    (void)tb::text::jinja::render_chat(tmpl, inputs);
  } catch (const tb::text::jinja::TemplateError&) {
  }
  return 0;
}
