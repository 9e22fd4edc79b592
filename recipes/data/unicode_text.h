// The bits of Unicode the byte-level BPE pre-tokenizers need: UTF-8 decoding that survives invalid
// bytes, and the classes \p{L}, \p{N} and \s of the split patterns.
//
// Approximate on purpose: letters and numbers are recognised in Latin (with extensions), Greek,
// Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Thai, Georgian, Hangul, kana, CJK ideographs and
// fullwidth forms, plus the common superscript/fraction/circled numbers; other scripts' letters fall
// into "other" (as punctuation would). Combining marks are not letters, as in Unicode.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tb::data::unicode {

struct CodePoint {
  char32_t value;  // U+FFFD for an invalid byte, which then stands alone
  size_t begin;    // byte range in the text
  size_t end;
};

std::vector<CodePoint> decode_utf8(const std::string& text);
void append_utf8(std::string& out, char32_t cp);

bool is_letter(char32_t cp);
bool is_number(char32_t cp);
bool is_whitespace(char32_t cp);  // \s: White_Space, including \r and \n

}  // namespace tb::data::unicode
