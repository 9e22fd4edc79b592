#include "export/gguf_pre_tokenizer.h"

#include <memory>
#include <vector>

#include "text/normalizers.h"
#include "text/pre_tokenizers.h"

namespace tb::exporting {

namespace {

// llama.cpp's split rules per name (llama-vocab.cpp, the regex_exprs of its BPE tokenizer), for the names
// a byte-level model we export can carry. The patterns are llama.cpp's own spelling: what its loader runs.
struct LlamaCppSplit {
  const char* name;
  const char* known_as;
  std::vector<std::string> regexes;
};

const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const std::string kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";

const std::vector<LlamaCppSplit>& llama_cpp_splits() {
  static const std::vector<LlamaCppSplit> splits = {
      {"llama-bpe", "Llama 3",
       {kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {"qwen2", "Qwen2, Qwen2.5, Qwen3",
       {kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {"gpt-4o", "Phi-4-mini, o200k",
       {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" + kContractions +
        R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" + kContractions +
        R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {"smollm", "SmolLM, SmolLM2", {R"(\p{N})", kGpt2}},
      {"gpt2", "GPT-2", {kGpt2}},
  };
  return splits;
}

// Text on which the names above split differently: digit runs of every length (1-3 at a time, one at a
// time, whole), contractions in both cases, punctuation before letters, camel case, accents, other
// scripts, runs of spaces, tabs and newlines, trailing whitespace.
const char* const kProbe =
    "In 2024 we counted 1234567 birds, 89 ducks and 3.14159 cats; x1y22z333w4444.\n"
    "I'm sure you'll see they've gone - it's what we'd do. DON'T SHOUT, WE'LL HEAR.\n"
    "(parenthesised) [bracketed] {braced} \"quoted\" path/to/file.txt a/b//c http://example.org/x?y=1\n"
    "camelCase MixedCase ALLCAPS iPhone HTTPServer l'homme\n"
    "Caf\xc3\xa9 d\xc3\xa9j\xc3\xa0 vu, na\xc3\xafve, \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, "
    "\xe6\x9d\xb1\xe4\xba\xac \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 "
    "\xf0\x9f\xa6\x99\xf0\x9f\xa6\x99!!\n"
    "  two  spaces,   three,\t\ttabs\n\n\nnew lines!!\n\n  indented\r\n\r\nend   ";

std::vector<std::string> pieces(const text::Normalizer* normalizer, const text::PreTokenizer& pre_tokenizer) {
  text::NormalizedString normalized{std::string(kProbe)};
  if (normalizer) normalizer->normalize(normalized);
  text::PreTokenizedString split(std::move(normalized));
  pre_tokenizer.pre_tokenize(split);
  std::vector<std::string> out;
  for (const auto& s : split.splits()) out.push_back(s.normalized.get());
  return out;
}

}  // namespace

std::optional<std::string> llama_cpp_pre_tokenizer(const text::TokenizerPipeline& pipeline) {
  if (!pipeline.pre_tokenizer()) return std::nullopt;
  // llama.cpp normalizes nothing; NFC (Qwen's) leaves text that is already NFC as it is.
  if (const text::Normalizer* n = pipeline.normalizer()) {
    const auto* unicode = dynamic_cast<const text::UnicodeNormalizer*>(n);
    if (!unicode || unicode->form() != text::NormalForm::NFC) return std::nullopt;
  }
  const std::vector<std::string> ours = pieces(pipeline.normalizer(), *pipeline.pre_tokenizer());
  for (const auto& candidate : llama_cpp_splits()) {
    std::vector<std::shared_ptr<const text::PreTokenizer>> steps;
    for (const auto& r : candidate.regexes)
      steps.push_back(std::make_shared<text::SplitPreTokenizer>(text::Pattern::regex(r), text::SplitBehavior::Isolated, false));
    steps.push_back(std::make_shared<text::ByteLevelPreTokenizer>(false, false));
    if (pieces(nullptr, text::SequencePreTokenizer(std::move(steps))) == ours) return std::string(candidate.name);
  }
  return std::nullopt;
}

std::string llama_cpp_pre_tokenizer_names() {
  std::string out;
  for (const auto& c : llama_cpp_splits()) out += std::string(out.empty() ? "" : ", ") + c.name + " (" + c.known_as + ")";
  return out;
}

}  // namespace tb::exporting
