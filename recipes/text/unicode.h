// Unicode character properties and normalization over utf8proc, in the shapes Hugging Face tokenizers
// uses them: Rust's char predicates (is_whitespace, is_numeric, to_lowercase), the general categories of
// its Punctuation and StripAccents steps, and NFC/NFD/NFKC/NFKD emitted as (char, change) pairs the way
// its alignment-tracking normalizer consumes them (text/normalized_string.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tb::text {

// One character of a transformed string and how it relates to the characters it replaces:
// 0 replaces the next original character, +1 is inserted, -N replaces the next one and removes N more.
struct CharChange {
  char32_t c;
  int change;
};

enum class NormalForm { NFD, NFKD, NFC, NFKC };

// utf8proc's general category (UTF8PROC_CATEGORY_*).
int general_category(char32_t cp);

bool is_white_space(char32_t cp);      // Unicode White_Space (Rust's char::is_whitespace)
bool is_numeric(char32_t cp);          // Nd, Nl, No (Rust's char::is_numeric)
bool is_letter(char32_t cp);           // L*
bool is_mark(char32_t cp);             // M*
bool is_mark_nonspacing(char32_t cp);  // Mn
bool is_punctuation(char32_t cp);      // ASCII punctuation or P* (tokenizers' Punctuation pre-tokenizer)
bool is_other(char32_t cp);            // Cc, Cf, Cs, Co, Cn
bool is_word_char(char32_t cp);        // Rust regex's Unicode \w: Alphabetic, M, Nd, Pc, Join_Control
int combining_class(char32_t cp);

// `text` (valid UTF-8) normalized, as the changes NormalizedString::transform takes.
void normalize_changes(NormalForm form, std::string_view text, std::vector<CharChange>& out);
// True when NFC leaves `text` (valid UTF-8) as it is, every change 0: all its characters are starters that
// nothing composes with and that NFC keeps. False may also mean "not known quickly".
bool nfc_quick_check(std::string_view text);
// The per-character test behind it: a starter that no decomposition, composition or exclusion touches. NFC
// of a text is the NFC of its parts cut before such characters, put together.
bool nfc_quick(char32_t cp);
// Rust's char::to_lowercase of each character as changes (a character may become two).
void lowercase_changes(std::string_view text, std::vector<CharChange>& out);

}  // namespace tb::text
