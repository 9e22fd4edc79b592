// torchtune's model tokenizers for the families whose conversations are not formatted like Llama's, on
// the files its configs name:
//   qwen2_tokenizer / qwen2_5_tokenizer / qwen3_tokenizer: vocab.json + merges.txt, ChatML turns
//     (<|im_start|>role\n text <|im_end|>\n; the last assistant turn closed by EOS = <|im_end|>), Qwen2.5
//     and Qwen3 wrapping tool results in <tool_response> and tool calls in <tool_call>;
//   phi3_mini_tokenizer: SentencePiece tokenizer.model with <|user|>/<|assistant|>/<|system|> ... <|end|>;
//   phi4_tokenizer: vocab.json + merges.txt, <|im_start|>role<|im_sep|> text <|im_end|>.
// The text itself is split as the model's own tokenizer.json splits it (Qwen2's pattern after NFC;
// Phi-4's cl100k pattern), special tokens in the text included: torchtune's Phi-4 tokenizer uses a GPT-2
// pattern instead, which cuts digits and words differently from the tokenizer the model was trained with.
// A model folder with a chat template is better served by tunebench.data.hf_tokenizer (data/hf_tokenizer.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "data/tokenizer.h"

namespace tb::data {

struct FamilyTokenizerOptions {
  std::optional<int64_t> max_seq_len;
  std::optional<PromptTemplate> prompt_template;
  std::string truncation_type = "right";
  // Special token content -> id; empty: the family's published ids (torchtune's defaults).
  std::map<std::string, int64_t> special_tokens;
};

enum class QwenVersion { Qwen2, Qwen2_5, Qwen3 };

// Throws std::runtime_error naming the file and the problem; std::invalid_argument for ChatMLTemplate
// (the turns would be wrapped twice, as torchtune refuses too).
std::shared_ptr<Tokenizer> make_qwen_tokenizer(QwenVersion version, const std::string& vocab_path,
                                               const std::string& merges_path, const FamilyTokenizerOptions& options);
std::shared_ptr<Tokenizer> make_phi3_mini_tokenizer(const std::string& spm_path, const FamilyTokenizerOptions& options);
std::shared_ptr<Tokenizer> make_phi4_tokenizer(const std::string& vocab_path, const std::string& merges_path,
                                               const FamilyTokenizerOptions& options);

// The BPE inside a vocab.json + merges.txt tokenizer (Qwen, Phi-4): its vocabulary and merges, for
// writing them elsewhere (GGUF). Null for any other tokenizer.
class BpeTokenizer;
const BpeTokenizer* vocab_merges_bpe(const Tokenizer& tokenizer);

// The SentencePiece model inside Phi-3-mini's tokenizer and the special tokens it places past the model's
// pieces (content -> id), for the same purpose. nullopt for any other tokenizer.
class SentencePieceTokenizer;
struct SentencePieceWithSpecials {
  const SentencePieceTokenizer* spm;
  const std::map<std::string, int64_t>* specials;
};
std::optional<SentencePieceWithSpecials> sentencepiece_with_specials(const Tokenizer& tokenizer);

// torchtune's special_tokens_path: every added token of a tokenizer.json, content -> id.
std::map<std::string, int64_t> read_added_tokens(const std::string& tokenizer_json_path);

}  // namespace tb::data
