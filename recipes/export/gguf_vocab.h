// A tokenizer as GGUF metadata (tokenizer.ggml.*), the way llama.cpp's converter records it, so that
// llama.cpp splits text into the same ids we train on:
//   SentencePiece (Llama 2, Mistral): model "llama", every piece with its score and type (normal,
//   unknown, control, unused, byte), BOS/EOS/UNK ids, add_bos_token, add_space_prefix (the dummy prefix);
//   byte-level BPE (a tokenizer.json or vocab.json + merges.txt: Qwen2/2.5/3, SmolLM2, Llama 3): model
//   "gpt2", the pre-tokenizer name llama.cpp knows the family's split pattern by, every token in its
//   byte-level spelling (added tokens as written: special ones control, others user-defined), the merges
//   in rank order, BOS/EOS/PAD ids and whether a BOS is added.
// A model vocabulary larger than the tokenizer's is padded with "[PAD<n>]" entries of type unused, as
// the converter pads it. A tokenizer.json that is not byte-level (Gemma's: SentencePiece-style pieces
// with byte fallback, no scores) is written from the tokenizer.model beside it, as llama.cpp's converter
// reads Gemma's.
#pragma once

#include <optional>
#include <string>

#include "checkpoint/gguf_file.h"
#include "data/chat_template.h"
#include "data/tokenizer.h"
#include "models/model_args.h"

namespace tb::exporting {

// Throws std::invalid_argument for a tokenizer kind we do not export yet.
// `tokenizer_dir`: the folder of the config's tokenizer files (where a tokenizer.model may sit).
void add_tokenizer_metadata(checkpoint::GgufMetadata& kv, const data::Tokenizer& tokenizer, int64_t model_vocab_size,
                            models::Family family, const std::string& tokenizer_dir = {});

// The chat template to record (tokenizer.chat_template): the tokenizer's own (a model folder's
// tokenizer_config.json), else the one in `checkpoint_dir`; nullopt when there is none.
std::optional<data::ChatTemplate> find_chat_template(const data::Tokenizer& tokenizer,
                                                     const std::optional<std::string>& checkpoint_dir);

}  // namespace tb::exporting
