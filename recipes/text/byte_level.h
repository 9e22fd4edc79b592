// GPT-2's byte-level alphabet: every byte stands for a printable code point (printable Latin-1 bytes for
// themselves, the others shifted past U+00FF in order), so a vocabulary of strings covers all bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/unicode.h"

namespace tb::text {

char32_t byte_to_char(unsigned char byte);
// The byte a code point stands for; -1 when it is not in the alphabet.
int char_to_byte(char32_t cp);
// The byte-level spelling of raw bytes (each byte as its code point, UTF-8 encoded).
std::string bytes_to_byte_level(std::string_view bytes);
// Raw bytes of a byte-level string; false when a character is outside the alphabet.
bool byte_level_to_bytes(std::string_view byte_level, std::string* out);
// The byte-level transform of valid UTF-8 as changes: a character's first byte replaces it, the others
// are inserted after it.
void byte_level_changes(std::string_view text, std::vector<CharChange>& out);

}  // namespace tb::text
