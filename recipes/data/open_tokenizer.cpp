#include "data/open_tokenizer.h"

#include <filesystem>
#include <stdexcept>

#include "data/bpe_tokenizer.h"
#include "data/hf_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "text/strings.h"

namespace tb::data {

namespace fs = std::filesystem;

std::shared_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error(path + ": no such file or folder");
  fs::path file = path;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(file / "tokenizer.json", ec)) return HfTokenizer::from_path(path);
    if (!fs::is_regular_file(file / "tokenizer.model", ec))
      throw std::runtime_error(path + ": the folder has neither tokenizer.json nor tokenizer.model");
    file /= "tokenizer.model";
  }
  if (file.extension() == ".json") return HfTokenizer::from_path(file.string());
  // tokenizer.model: a SentencePiece protobuf (Llama 2, Mistral, Gemma, Phi-3) or tiktoken's text (Llama 3).
  try {
    return SentencePieceTokenizer::from_file(file.string());
  } catch (const std::runtime_error& spm_error) {
    try {
      return BpeTokenizer::from_file(file.string());
    } catch (const std::runtime_error& tiktoken_error) {
      throw std::runtime_error(file.string() + ": neither a SentencePiece model (" + spm_error.what() +
                               ") nor a tiktoken file (" + tiktoken_error.what() + ")");
    }
  }
}

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD: what decoding makes of half a UTF-8 character

bool ends_with_replacement(const std::string& s) {
  return text::ends_with(s, kReplacement);
}
}  // namespace

std::vector<std::string> token_pieces(const Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
  // Decoding a few tokens of context before each one is enough for both, and keeps this linear.
  constexpr size_t kContext = 8;
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (size_t j = 0; j < ids.size(); ++j) {
    const size_t from = j > kContext ? j - kContext : 0;
    std::vector<int64_t> with(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.begin() + static_cast<std::ptrdiff_t>(j));
    const std::string a = tokenizer.decode(with);
    with.push_back(ids[j]);
    const std::string b = tokenizer.decode(with);
    // A character split over tokens decodes as U+FFFD until its last byte: it then belongs to this token,
    // and the earlier tokens' replacement characters are taken back.
    std::string whole = a;
    size_t taken_back = 0;
    while (ends_with_replacement(whole) && !(b.size() > whole.size() && b.compare(0, whole.size(), whole) == 0)) {
      whole.resize(whole.size() - 3);
      taken_back += 3;
    }
    std::string piece;
    if (b == a) {
      try {
        // Decodes to nothing: a special token, or SentencePiece's word-start "\u2581" at the start of a text.
        piece = tokenizer.id_to_token(ids[j]);
        if (piece.compare(0, 3, "\xE2\x96\x81") == 0) piece.replace(0, 3, " ");
      } catch (const std::out_of_range&) {
        piece = "<" + std::to_string(ids[j]) + ">";
      }
    } else if (b.size() >= whole.size() && b.compare(0, whole.size(), whole) == 0) {
      piece = b.substr(whole.size());
      for (size_t k = pieces.size(); taken_back > 0 && k-- > 0;) {
        while (taken_back > 0 && ends_with_replacement(pieces[k])) {
          pieces[k].resize(pieces[k].size() - 3);
          taken_back -= 3;
        }
        if (!pieces[k].empty()) break;
      }
    } else {
      piece = tokenizer.decode({ids[j]});
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

}  // namespace tb::data
