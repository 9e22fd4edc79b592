#include "export/gguf_vocab.h"

#include <stdexcept>

#include "data/chat_template.h"
#include "data/hf_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"

namespace tb::exporting {

namespace {

constexpr int32_t kTypeUnused = 5;  // llama.cpp's LLAMA_TOKEN_TYPE_UNUSED (= SentencePiece's)

void add_sentencepiece(checkpoint::GgufMetadata& kv, const data::SentencePieceTokenizer& spm, int64_t model_vocab) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int64_t id = 0; id < spm.vocab_size(); ++id) {
    const auto [score, type] = spm.piece_score_and_type(id);
    tokens.push_back(spm.id_to_piece(id));
    scores.push_back(score);
    types.push_back(type);
  }
  for (int64_t id = spm.vocab_size(); id < model_vocab; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    scores.push_back(-1000.0f);
    types.push_back(kTypeUnused);
  }
  kv.set_string("tokenizer.ggml.model", "llama");
  kv.set_strings("tokenizer.ggml.tokens", tokens);
  kv.set_f32s("tokenizer.ggml.scores", scores);
  kv.set_i32s("tokenizer.ggml.token_type", types);
  if (spm.bos_id() >= 0) kv.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(spm.bos_id()));
  if (spm.eos_id() >= 0) kv.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(spm.eos_id()));
  kv.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(spm.unk_id()));
  if (spm.model_pad_id() >= 0) kv.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(spm.model_pad_id()));
  kv.set_bool("tokenizer.ggml.add_bos_token", spm.bos_id() >= 0);
  kv.set_bool("tokenizer.ggml.add_eos_token", false);
  // The dummy prefix shows as a leading "\u2581" on the first piece of a word at the start of the text.
  const auto ids = spm.encode("a", false, false);
  const bool space_prefix = !ids.empty() && spm.id_to_piece(ids.front()).rfind("\xe2\x96\x81", 0) == 0;
  kv.set_bool("tokenizer.ggml.add_space_prefix", space_prefix);
}

}  // namespace

void add_tokenizer_metadata(checkpoint::GgufMetadata& kv, const data::Tokenizer& tokenizer, int64_t model_vocab_size) {
  if (const auto* spm = dynamic_cast<const data::SentencePieceTokenizer*>(&tokenizer)) {
    add_sentencepiece(kv, *spm, model_vocab_size);
    return;
  }
  throw std::invalid_argument(
      "export gguf: this tokenizer is not exported yet (SentencePiece tokenizer.model files are); "
      "byte-level BPE (tokenizer.json, vocab.json + merges.txt) is still to come");
}

std::optional<std::string> find_chat_template(const data::Tokenizer& tokenizer,
                                              const std::optional<std::string>& checkpoint_dir) {
  if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer); hf && hf->chat_template())
    return hf->chat_template()->source();
  if (checkpoint_dir)
    if (const auto found = data::ChatTemplate::from_model_dir(*checkpoint_dir)) return found->source();
  return std::nullopt;
}

}  // namespace tb::exporting
