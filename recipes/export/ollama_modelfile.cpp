#include "export/ollama_modelfile.h"

#include <stdexcept>

namespace tb::exporting {

namespace {

// A one-line value in double quotes: backslashes and quotes escaped, as Ollama's parser unescapes them.
std::string in_quotes(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Multi-line text in triple quotes, unless it holds triple quotes itself.
std::string block(const std::string& value) {
  if (value.find("\"\"\"") == std::string::npos && !value.empty() && value.back() != '"') return "\"\"\"" + value + "\"\"\"";
  std::string escaped;
  for (char c : value) escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
  return in_quotes(escaped);
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
  if (without.size() <= prefix.size() + suffix.size() || without.compare(0, prefix.size(), prefix) != 0 ||
      without.compare(without.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  return without.substr(prefix.size(), without.size() - prefix.size() - suffix.size());
}

std::string modelfile_text(const Modelfile& modelfile) {
  std::string out = "# Written by tunebench-cli export gguf --ollama; create the model with:\n"
                    "#   ollama create <name> -f Modelfile\n";
  out += "FROM " + modelfile.from + "\n";
  for (const auto& stop : modelfile.stop) out += "PARAMETER stop " + in_quotes(stop) + "\n";
  if (modelfile.system) out += "SYSTEM " + block(*modelfile.system) + "\n";
  return out;
}

}  // namespace tb::exporting
