// The Modelfile `ollama create NAME -f Modelfile` reads beside an exported GGUF: FROM the file, a stop
// parameter per token that ends a turn, and the system prompt the chat template falls back to when a
// conversation has none (Qwen2.5's "You are Qwen, ..."), which Ollama would otherwise not send. A chat
// template is left to Ollama, which reads tokenizer.chat_template from the GGUF; a model trained on the
// Alpaca format without one gets that format as its TEMPLATE (else Ollama would send the bare prompt).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/chat_template.h"

namespace tb::exporting {

struct Modelfile {
  std::string from;                     // the GGUF, relative to the Modelfile ("./model.gguf")
  std::vector<std::string> stop;        // token texts
  std::optional<std::string> system;    // the template's default system prompt
  std::optional<std::string> prompt_template;  // TEMPLATE, in Ollama's Go template syntax
};

// The Alpaca format alpaca_dataset trains on (data::alpaca_prompt), as an Ollama TEMPLATE.
std::string alpaca_ollama_template();

// The text a template writes for a system message when the conversation has none: the difference
// between rendering [user] and [system, user]. nullopt when it writes none or refuses a system message.
std::optional<std::string> default_system_prompt(const data::ChatTemplate& chat_template);

// The Modelfile's text, values quoted as Ollama's parser reads them (taken as they stand between double
// quotes on one line or triple quotes over several: no escapes).
std::string modelfile_text(const Modelfile& modelfile);

}  // namespace tb::exporting
