// A tokenizer as GGUF metadata (tokenizer.ggml.*), the way llama.cpp's converter records it, so that
// llama.cpp splits text into the same ids we train on:
//   SentencePiece (Llama 2, Mistral, Gemma's tokenizer.model): model "llama", every piece with its score and
//   type (normal, unknown, control, unused, byte), BOS/EOS/UNK ids, add_bos_token, add_space_prefix (the
//   dummy prefix). All 256 byte pieces are required (llama.cpp refuses a vocabulary without them); a model
//   that collapses runs of spaces (remove_extra_whitespaces) exports with a warning, as llama.cpp keeps them.
//   A SentencePiece-style tokenizer.json (Gemma's: pieces with byte fallback) is written from the
//   tokenizer.model beside it, as llama.cpp's converter reads Gemma's; without one, from the tokenizer.json
//   itself, each piece scored by the rank of the merge that makes it (llama.cpp merges by score).
//   byte-level BPE (a tokenizer.json or vocab.json + merges.txt: Qwen2/2.5/3, SmolLM2, Llama 3, Phi-4-mini):
//   model "gpt2", the pre-tokenizer name of llama.cpp's that splits text as the tokenizer does (found by
//   splitting a probe text both ways; a tokenizer llama.cpp has no name for is refused), every token in its
//   byte-level spelling (added tokens as written: special ones control, others user-defined), the merges
//   in rank order, BOS/EOS/PAD ids and whether a BOS is added.
// A model vocabulary larger than the tokenizer's is padded with "[PAD<n>]" entries of type unused, as
// the converter pads it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/gguf_file.h"
#include "data/chat_template.h"
#include "data/tokenizer.h"

namespace tb::exporting {

// Throws std::invalid_argument for a tokenizer llama.cpp would not tokenize as we do; returns warnings
// (a difference the user should know of). `tokenizer_dir`: the folder of the config's tokenizer files
// (where a tokenizer.model may sit).
std::vector<std::string> add_tokenizer_metadata(checkpoint::GgufMetadata& kv, const data::Tokenizer& tokenizer,
                                                int64_t model_vocab_size, const std::string& tokenizer_dir = {});

// The chat template to record (tokenizer.chat_template): the tokenizer's own (a model folder's
// tokenizer_config.json), else the one in `checkpoint_dir`; nullopt when there is none.
std::optional<data::ChatTemplate> find_chat_template(const data::Tokenizer& tokenizer,
                                                     const std::optional<std::string>& checkpoint_dir);

}  // namespace tb::exporting
