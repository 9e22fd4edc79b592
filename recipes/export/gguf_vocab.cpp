#include "export/gguf_vocab.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "data/bpe_tokenizer.h"
#include "data/chat_template.h"
#include "data/family_tokenizers.h"
#include "data/hf_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "text/bpe_model.h"
#include "text/pipeline.h"

namespace tb::exporting {

namespace {

// llama.cpp's token types (= SentencePiece's numbering).
constexpr int32_t kTypeNormal = 1, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5;

// `specials`: tokens a family places past the model's pieces (Phi-3-mini's <|user|>, ... at 32000+),
// written as control tokens; `eos`/`pad`: the family's, when it overrides the model's (-1: the model's).
void add_sentencepiece(checkpoint::GgufMetadata& kv, const data::SentencePieceTokenizer& spm, int64_t model_vocab,
                       const std::map<std::string, int64_t>& specials = {}, int64_t eos = -1, int64_t pad = -1) {
  std::map<int64_t, std::string> special_at;
  for (const auto& [content, id] : specials) special_at[id] = content;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int64_t id = 0; id < spm.vocab_size(); ++id) {
    const auto [score, type] = spm.piece_score_and_type(id);
    tokens.push_back(spm.id_to_piece(id));
    scores.push_back(score);
    types.push_back(type);
  }
  const int64_t n = std::max(model_vocab, special_at.empty() ? int64_t(0) : special_at.rbegin()->first + 1);
  for (int64_t id = spm.vocab_size(); id < n; ++id) {
    const auto special = special_at.find(id);
    tokens.push_back(special != special_at.end() ? special->second : "[PAD" + std::to_string(id) + "]");
    scores.push_back(special != special_at.end() ? 0.0f : -1000.0f);
    types.push_back(special != special_at.end() ? kTypeControl : kTypeUnused);
  }
  kv.set_string("tokenizer.ggml.model", "llama");
  kv.set_strings("tokenizer.ggml.tokens", tokens);
  kv.set_f32s("tokenizer.ggml.scores", scores);
  kv.set_i32s("tokenizer.ggml.token_type", types);
  if (eos < 0) eos = spm.eos_id();
  if (pad < 0) pad = spm.model_pad_id();
  if (spm.bos_id() >= 0) kv.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(spm.bos_id()));
  if (eos >= 0) kv.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos));
  kv.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(spm.unk_id()));
  if (pad >= 0) kv.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(pad));
  kv.set_bool("tokenizer.ggml.add_bos_token", spm.bos_id() >= 0);
  kv.set_bool("tokenizer.ggml.add_eos_token", false);
  // The dummy prefix shows as a leading "\u2581" on the first piece of a word at the start of the text.
  const auto ids = spm.encode("a", false, false);
  const bool space_prefix = !ids.empty() && spm.id_to_piece(ids.front()).rfind("\xe2\x96\x81", 0) == 0;
  kv.set_bool("tokenizer.ggml.add_space_prefix", space_prefix);
}

// The name llama.cpp's loader knows a family's split pattern by (llama-vocab.cpp's tokenizer_pre).
std::string pre_tokenizer_name(models::Family family, const data::BpeTokenizer& bpe) {
  switch (family) {
    case models::Family::qwen2:
    case models::Family::qwen3: return "qwen2";
    case models::Family::llama: return bpe.has_llama3_chat_tokens() ? "llama-bpe" : "smollm";
    case models::Family::phi3: return "gpt-4o";  // Phi-4-mini's o200k-style split
    default:
      throw std::invalid_argument(std::string("export gguf: a byte-level BPE tokenizer for the ") +
                                  models::family_name(family) + " family is not exported yet");
  }
}

// `bpe` holds the vocabulary and merges; `ids` is the tokenizer training used (its BOS/EOS/PAD).
void add_byte_level_bpe(checkpoint::GgufMetadata& kv, const data::BpeTokenizer& bpe, const data::Tokenizer& ids,
                        int64_t model_vocab, models::Family family) {
  const text::BpeModel& model = bpe.pipeline().model();
  if (!bpe.pipeline().byte_level() || model.from_ranks())
    throw std::invalid_argument(
        "export gguf: only byte-level BPE vocabularies with merges export (a tokenizer.json or vocab.json + "
        "merges.txt; a tiktoken tokenizer.model does not list its merges); a SentencePiece-style tokenizer.json "
        "(Gemma's) needs its tokenizer.model beside it");
  std::map<int64_t, data::AddedToken> added;
  for (const auto& t : bpe.added_tokens()) added.emplace(t.id, t);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  const int64_t n = std::max<int64_t>(model_vocab, model.max_id() + 1);
  for (int64_t id = 0; id < n; ++id) {
    if (const auto it = added.find(id); it != added.end()) {
      tokens.push_back(it->second.content);
      types.push_back(it->second.special ? kTypeControl : kTypeUserDefined);
    } else if (const std::string* token = model.id_to_token(static_cast<uint32_t>(id))) {
      tokens.push_back(*token);
      types.push_back(kTypeNormal);
    } else {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      types.push_back(kTypeUnused);
    }
  }
  std::vector<std::string> merges;
  for (const auto& [a, b] : model.merges()) merges.push_back(a + " " + b);
  kv.set_string("tokenizer.ggml.model", "gpt2");
  kv.set_string("tokenizer.ggml.pre", pre_tokenizer_name(family, bpe));
  kv.set_strings("tokenizer.ggml.tokens", tokens);
  kv.set_i32s("tokenizer.ggml.token_type", types);
  kv.set_strings("tokenizer.ggml.merges", merges);
  if (ids.bos_id() >= 0) kv.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(ids.bos_id()));
  if (ids.eos_id() >= 0) kv.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(ids.eos_id()));
  if (ids.pad_id() >= 0) kv.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(ids.pad_id()));
  // llama.cpp adds a BOS when training did: when our encode with BOS puts one first (not for Qwen: none).
  const auto with_bos = ids.encode("a", true, false);
  kv.set_bool("tokenizer.ggml.add_bos_token", ids.bos_id() >= 0 && !with_bos.empty() && with_bos.front() == ids.bos_id());
}

}  // namespace

void add_tokenizer_metadata(checkpoint::GgufMetadata& kv, const data::Tokenizer& tokenizer, int64_t model_vocab_size,
                            models::Family family, const std::string& tokenizer_dir) {
  if (const auto* spm = dynamic_cast<const data::SentencePieceTokenizer*>(&tokenizer)) {
    add_sentencepiece(kv, *spm, model_vocab_size);
    return;
  }
  if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer)) {
    const std::string model_file = tokenizer_dir.empty() ? std::string() : tokenizer_dir + "/tokenizer.model";
    if (!hf->bpe().pipeline().byte_level() && !model_file.empty() && std::filesystem::exists(model_file)) {
      const auto spm = data::SentencePieceTokenizer::from_file(model_file);
      if (spm->vocab_size() != hf->vocab_size())
        throw std::invalid_argument("export gguf: " + model_file + " has " + std::to_string(spm->vocab_size()) +
                                    " pieces, tokenizer.json " + std::to_string(hf->vocab_size()) + ": not the same vocabulary");
      add_sentencepiece(kv, *spm, model_vocab_size);
      return;
    }
    add_byte_level_bpe(kv, hf->bpe(), tokenizer, model_vocab_size, family);
    return;
  }
  if (const auto* bpe = dynamic_cast<const data::BpeTokenizer*>(&tokenizer)) {
    add_byte_level_bpe(kv, *bpe, tokenizer, model_vocab_size, family);
    return;
  }
  if (const auto* bpe = data::vocab_merges_bpe(tokenizer)) {
    add_byte_level_bpe(kv, *bpe, tokenizer, model_vocab_size, family);
    return;
  }
  if (const auto parts = data::sentencepiece_with_specials(tokenizer)) {
    add_sentencepiece(kv, *parts->spm, model_vocab_size, *parts->specials, tokenizer.eos_id(), tokenizer.pad_id());
    return;
  }
  throw std::invalid_argument(
      "export gguf: this tokenizer is not exported yet (SentencePiece tokenizer.model files and byte-level BPE "
      "tokenizer.json / vocab.json + merges.txt are)");
}

std::optional<data::ChatTemplate> find_chat_template(const data::Tokenizer& tokenizer,
                                                     const std::optional<std::string>& checkpoint_dir) {
  if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer); hf && hf->chat_template())
    return *hf->chat_template();
  if (checkpoint_dir) return data::ChatTemplate::from_model_dir(*checkpoint_dir);
  return std::nullopt;
}

}  // namespace tb::exporting
