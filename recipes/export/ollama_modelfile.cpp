#include "export/ollama_modelfile.h"

#include <stdexcept>

#include "data/sft_datasets.h"
#include "text/strings.h"

namespace tb::exporting {

namespace {

// Ollama's parser takes a value between double quotes (one line) or triple quotes (any lines) as it
// stands: it unescapes nothing, so nothing is escaped here.
std::string quoted(const std::string& value) {
  if (value.find('\n') == std::string::npos && value.find('\r') == std::string::npos) return "\"" + value + "\"";
  return "\"\"\"" + value + "\"\"\"";
}

}  // namespace

std::optional<std::string> default_system_prompt(const data::ChatTemplate& chat_template) {
  const std::string system_marker = "TUNEBENCH-SYSTEM-MARKER", user_marker = "TUNEBENCH-USER-MARKER";
  std::string with, without;
  try {
    with = chat_template.render_text({data::Message("system", system_marker), data::Message("user", user_marker)}, true);
    without = chat_template.render_text({data::Message("user", user_marker)}, true);
  } catch (const std::exception&) {
    return std::nullopt;  // e.g. a template that raises on a system message
  }
  const auto at = with.find(system_marker);
  if (at == std::string::npos) return std::nullopt;
  const std::string prefix = with.substr(0, at), suffix = with.substr(at + system_marker.size());
  if (without.size() <= prefix.size() + suffix.size() || !text::starts_with(without, prefix) ||
      !text::ends_with(without, suffix))
    return std::nullopt;
  return without.substr(prefix.size(), without.size() - prefix.size() - suffix.size());
}

std::string alpaca_ollama_template() {
  // The instruction is the user's message; the response follows as the model writes it.
  return data::alpaca_prompt("{{ .Prompt }}", "") + "{{ .Response }}";
}

std::string modelfile_text(const Modelfile& modelfile) {
  std::string out = "# Written by tunebench-cli export gguf --ollama; create the model with:\n"
                    "#   ollama create <name> -f Modelfile\n";
  out += "FROM " + modelfile.from + "\n";
  for (const auto& stop : modelfile.stop) out += "PARAMETER stop " + quoted(stop) + "\n";
  if (modelfile.prompt_template && modelfile.prompt_template->find("\"\"\"") == std::string::npos)
    out += "TEMPLATE \"\"\"" + *modelfile.prompt_template + "\"\"\"\n";
  if (modelfile.system) {
    if (modelfile.system->find("\"\"\"") == std::string::npos)
      out += "SYSTEM \"\"\"" + *modelfile.system + "\"\"\"\n";
    else  // a triple quote cannot stand inside Ollama's quotes
      out += "# The template's default system prompt holds \"\"\" and cannot be written here; set SYSTEM by hand.\n";
  }
  return out;
}

}  // namespace tb::exporting
