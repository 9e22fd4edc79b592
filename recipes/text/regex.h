// Oniguruma regular expressions as Hugging Face tokenizers runs them: compiled once with Oniguruma's
// default syntax (ONIG_SYNTAX_DEFAULT, the Oniguruma syntax: what the Rust onig crate's Regex::new passes),
// no options, UTF-8; matched over UTF-8 text with the onig crate's find_iter rule (an empty match right
// where the previous match ended is skipped by one character). Safe to use from several threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::text {

using ByteRange = std::pair<size_t, size_t>;

// A stretch of a split text and whether it is a match of the pattern.
struct PatternPiece {
  size_t start, end;
  bool is_match;
};

class Regex {
 public:
  // Throws std::invalid_argument with Oniguruma's message when the pattern does not compile.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return pattern_; }
  // The non-overlapping matches in `text`, appended to `out`.
  void find_all(std::string_view text, std::vector<ByteRange>& out) const;
  // First match at or after `from`; false when there is none.
  bool search(std::string_view text, size_t from, size_t* start, size_t* end) const;
  // Whether the pattern matches `text` from its first byte (anchored at 0, any length).
  bool matches_at_start(std::string_view text) const;

 private:
  std::string pattern_;
  void* regex_ = nullptr;  // OnigRegex
};

// A Split or Replace pattern of tokenizer.json: {"String": ...} or {"Regex": ...}. tokenizers escapes a
// string into a regex; a plain search for a non-empty string finds the same matches, faster.
class Pattern {
 public:
  static Pattern literal(const std::string& text);
  static Pattern regex(const std::string& pattern);  // throws std::invalid_argument

  // tokenizers' Pattern::find_matches: the whole text as consecutive pieces, the matches and the text
  // between them; an empty text gives one empty non-match.
  void pieces(std::string_view text, std::vector<PatternPiece>& out) const;
  bool is_literal() const { return regex_ == nullptr; }
  const std::string& literal_text() const { return literal_; }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

void regex_pieces(const Regex& regex, std::string_view text, std::vector<PatternPiece>& out);

}  // namespace tb::text
