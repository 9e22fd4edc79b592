#include "export/gguf_vocab.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "data/bpe_tokenizer.h"
#include "data/chat_template.h"
#include "data/family_tokenizers.h"
#include "data/hf_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "export/gguf_pre_tokenizer.h"
#include "text/bpe_model.h"
#include "text/pipeline.h"

namespace tb::exporting {

namespace {

// llama.cpp's token types (= SentencePiece's numbering).
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5,
                  kTypeByte = 6;
constexpr const char* kSpace = "\xe2\x96\x81";  // SentencePiece's "▁"

size_t characters(const std::string& utf8) {
  return static_cast<size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string byte_piece(int byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", byte);
  return buf;
}

// llama.cpp spells a character its vocabulary lacks with the byte pieces <0x00>..<0xFF>, and aborts
// loading a vocabulary without <0x0A> (its newline): a SentencePiece vocabulary needs all 256.
// `has_byte(piece)`: whether the vocabulary holds that byte piece.
template <class HasByte>
void require_byte_pieces(const std::string& what, HasByte has_byte) {
  int missing = 0;
  std::string first;
  for (int b = 0; b < 256; ++b)
    if (!has_byte(byte_piece(b)) && missing++ == 0) first = byte_piece(b);
  if (missing > 0)
    throw std::invalid_argument("export gguf: " + what + " lacks " + std::to_string(missing) +
                                " of the 256 byte pieces (" + first + (missing > 1 ? ", ..." : "") +
                                "): llama.cpp spells characters outside the vocabulary with them and refuses a "
                                "vocabulary without them; a SentencePiece model trained with byte_fallback has them");
}

// `specials`: tokens a family places past the model's pieces (Phi-3-mini's <|user|>, ... at 32000+),
// written as control tokens; `eos`/`pad`: the family's, when it overrides the model's (-1: the model's).
void add_sentencepiece(checkpoint::GgufMetadata& kv, std::vector<std::string>& warnings,
                       const data::SentencePieceTokenizer& spm, int64_t model_vocab,
                       const std::map<std::string, int64_t>& specials = {}, int64_t eos = -1, int64_t pad = -1) {
  require_byte_pieces("this tokenizer.model", [&](const std::string& piece) {
    const int64_t id = spm.piece_to_id(piece);
    return id != spm.unk_id() && spm.piece_score_and_type(id).second == kTypeByte;
  });
  // SentencePiece's remove_extra_whitespaces (its default) collapses runs of spaces and trims the ends
  // before tokenizing; llama.cpp keeps them.
  const std::string spaced = "a  b";
  if (spm.decode(spm.encode(spaced, false, false)) != spaced)
    warnings.push_back("this tokenizer.model collapses runs of spaces before tokenizing (SentencePiece's "
                       "remove_extra_whitespaces); llama.cpp keeps them, so text with repeated, leading or trailing "
                       "spaces is tokenized differently there than in training");
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

// SentencePiece-style BPE in a tokenizer.json (Gemma 3's, with byte fallback and no tokenizer.model
// beside it) as llama.cpp's SentencePiece vocabulary: llama.cpp merges the adjacent pair whose joined
// piece scores highest, so each piece scores minus the rank of the first merge that makes it; the BPE's
// merge order is then llama.cpp's. (A multi-character piece no merge makes scores below all others: BPE
// never makes it, llama.cpp only as a last resort.) The text's spaces must be "▁" and nothing else
// changed; a leading "▁" on the first word is llama.cpp's add_space_prefix.
void add_sentencepiece_from_bpe(checkpoint::GgufMetadata& kv, const data::BpeTokenizer& bpe, const data::Tokenizer& ids,
                                int64_t model_vocab) {
  const text::TokenizerPipeline& pipeline = bpe.pipeline();
  const text::BpeModel& model = pipeline.model();
  if (!model.options().byte_fallback || model.from_ranks())
    throw std::invalid_argument(
        "export gguf: this tokenizer.json is neither byte-level BPE nor SentencePiece-style BPE with byte_fallback, "
        "and has no tokenizer.model beside it: llama.cpp has no tokenizer for it");
  require_byte_pieces("this tokenizer.json", [&](const std::string& piece) { return model.token_to_id(piece).has_value(); });
  const std::string probe = "Hi  there, you";
  std::string joined;
  for (const int64_t id : ids.encode(probe, false, false)) joined += pipeline.id_to_token(id).value_or("?");
  std::string escaped;
  for (const char c : probe) escaped += c == ' ' ? std::string(kSpace) : std::string(1, c);
  const bool space_prefix = joined == kSpace + escaped;
  if (!space_prefix && joined != escaped)
    throw std::invalid_argument("export gguf: this tokenizer.json changes text before tokenizing in a way llama.cpp's "
                                "SentencePiece tokenizer does not (\"" + probe + "\" became \"" + joined +
                                "\"): only spaces spelled as \u2581, with or without one before the text, are exported");

  std::unordered_map<std::string, float> score;
  {
    const auto merges = model.merges();
    for (size_t rank = 0; rank < merges.size(); ++rank)
      score.emplace(merges[rank].first + merges[rank].second, -static_cast<float>(rank));
  }
  const float never_merged = -static_cast<float>(model.merge_count() + 1);
  std::map<int64_t, data::AddedToken> added;
  for (const auto& t : bpe.added_tokens()) added.emplace(t.id, t);
  const int64_t unk = model.options().unk_token ? static_cast<int64_t>(model.token_to_id(*model.options().unk_token).value_or(-1)) : -1;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  const int64_t n = std::max<int64_t>(model_vocab, std::max<int64_t>(model.max_id(), added.empty() ? 0 : added.rbegin()->first) + 1);
  for (int64_t id = 0; id < n; ++id) {
    const std::optional<std::string> token = pipeline.id_to_token(id);
    const auto a = added.find(id);
    if (!token) {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      scores.push_back(-1000.0f);
      types.push_back(kTypeUnused);
      continue;
    }
    tokens.push_back(*token);
    const auto s = score.find(*token);
    scores.push_back(s != score.end() ? s->second : characters(*token) > 1 ? never_merged : 0.0f);
    if (id == unk) types.push_back(kTypeUnknown);
    else if (a != added.end()) types.push_back(a->second.special ? kTypeControl : kTypeUserDefined);
    else if (token->size() == 6 && token->rfind("<0x", 0) == 0 && *token == byte_piece(std::stoi(token->substr(3, 2), nullptr, 16)))
      types.push_back(kTypeByte);
    else types.push_back(kTypeNormal);
  }
  kv.set_string("tokenizer.ggml.model", "llama");
  kv.set_strings("tokenizer.ggml.tokens", tokens);
  kv.set_f32s("tokenizer.ggml.scores", scores);
  kv.set_i32s("tokenizer.ggml.token_type", types);
  if (ids.bos_id() >= 0) kv.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(ids.bos_id()));
  if (ids.eos_id() >= 0) kv.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(ids.eos_id()));
  if (unk >= 0) kv.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(unk));
  if (ids.pad_id() >= 0) kv.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(ids.pad_id()));
  const auto with_bos = ids.encode("a", true, false);
  kv.set_bool("tokenizer.ggml.add_bos_token", ids.bos_id() >= 0 && !with_bos.empty() && with_bos.front() == ids.bos_id());
  kv.set_bool("tokenizer.ggml.add_eos_token", false);
  kv.set_bool("tokenizer.ggml.add_space_prefix", space_prefix);
}

// `bpe` holds the vocabulary and merges; `ids` is the tokenizer training used (its BOS/EOS/PAD).
void add_byte_level_bpe(checkpoint::GgufMetadata& kv, const data::BpeTokenizer& bpe, const data::Tokenizer& ids,
                        int64_t model_vocab) {
  const text::BpeModel& model = bpe.pipeline().model();
  if (!bpe.pipeline().byte_level() || model.from_ranks())
    throw std::invalid_argument(
        "export gguf: only byte-level BPE vocabularies with merges export (a tokenizer.json or vocab.json + "
        "merges.txt; a tiktoken tokenizer.model does not list its merges)");
  const std::optional<std::string> pre = llama_cpp_pre_tokenizer(bpe.pipeline());
  if (!pre)
    throw std::invalid_argument(
        "export gguf: llama.cpp has no pre-tokenizer that splits text as this tokenizer does (its normalizer and "
        "pre_tokenizer), so llama.cpp would tokenize text differently than training did; the names it knows here: " +
        llama_cpp_pre_tokenizer_names());
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
  kv.set_string("tokenizer.ggml.pre", *pre);
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

std::vector<std::string> add_tokenizer_metadata(checkpoint::GgufMetadata& kv, const data::Tokenizer& tokenizer,
                                                int64_t model_vocab_size, const std::string& tokenizer_dir) {
  std::vector<std::string> warnings;
  if (const auto* spm = dynamic_cast<const data::SentencePieceTokenizer*>(&tokenizer)) {
    add_sentencepiece(kv, warnings, *spm, model_vocab_size);
  } else if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer)) {
    const std::string model_file = tokenizer_dir.empty() ? std::string() : tokenizer_dir + "/tokenizer.model";
    if (hf->bpe().pipeline().byte_level()) {
      add_byte_level_bpe(kv, hf->bpe(), tokenizer, model_vocab_size);
    } else if (!model_file.empty() && std::filesystem::exists(model_file)) {  // its exact scores
      const auto spm = data::SentencePieceTokenizer::from_file(model_file);
      if (spm->vocab_size() != hf->vocab_size())
        throw std::invalid_argument("export gguf: " + model_file + " has " + std::to_string(spm->vocab_size()) +
                                    " pieces, tokenizer.json " + std::to_string(hf->vocab_size()) + ": not the same vocabulary");
      add_sentencepiece(kv, warnings, *spm, model_vocab_size);
    } else {
      add_sentencepiece_from_bpe(kv, hf->bpe(), tokenizer, model_vocab_size);
    }
  } else if (const auto* bpe = dynamic_cast<const data::BpeTokenizer*>(&tokenizer)) {
    add_byte_level_bpe(kv, *bpe, tokenizer, model_vocab_size);
  } else if (const auto* bpe = data::vocab_merges_bpe(tokenizer)) {
    add_byte_level_bpe(kv, *bpe, tokenizer, model_vocab_size);
  } else if (const auto parts = data::sentencepiece_with_specials(tokenizer)) {
    add_sentencepiece(kv, warnings, *parts->spm, model_vocab_size, *parts->specials, tokenizer.eos_id(), tokenizer.pad_id());
  } else {
    throw std::invalid_argument(
        "export gguf: this tokenizer is not exported yet (SentencePiece tokenizer.model files and byte-level BPE "
        "tokenizer.json / vocab.json + merges.txt are)");
  }
  return warnings;
}

std::optional<data::ChatTemplate> find_chat_template(const data::Tokenizer& tokenizer,
                                                     const std::optional<std::string>& checkpoint_dir) {
  if (const auto* hf = dynamic_cast<const data::HfTokenizer*>(&tokenizer); hf && hf->chat_template())
    return *hf->chat_template();
  if (checkpoint_dir) return data::ChatTemplate::from_model_dir(*checkpoint_dir);
  return std::nullopt;
}

}  // namespace tb::exporting
