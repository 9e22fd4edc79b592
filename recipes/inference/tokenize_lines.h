// `tunebench-cli tokenize`: what a tokenizer makes of each input line, one JSON object a line.
//   {"text": ...}      -> {"ids": [...]}  (add_special_tokens=False, as Hugging Face tokenizers gives them)
//   {"messages": [...]} (OpenAI role/content; or {"conversations": [...]} in ShareGPT from/value), with an
//   optional "tools" list -> {"text": the conversation as the model's chat template writes it (or the
//   tokenizer's own formatting with its special tokens written out), "ids": [...], "mask": [...]}; mask
//   true: the token is masked out of the loss (the prompt and the template's own text), as torchtune's.
//   add_generation_prompt: the conversation ends with the assistant's header, ready for generation.
// A plain text file gives one {"text": line} per line.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "data/json_rows.h"
#include "data/tokenizer.h"

namespace tb::inference {

// One input row. Throws data::DataError naming the row's file and line.
nlohmann::ordered_json tokenize_row(const data::Tokenizer& tokenizer, const data::Row& row, bool add_generation_prompt);

// Every line of `path` (JSON Lines when `jsonl`, else text a line) to `out`; returns the lines written.
size_t tokenize_file(const data::Tokenizer& tokenizer, const std::string& path, bool jsonl, bool add_generation_prompt,
                     std::ostream& out);

}  // namespace tb::inference
