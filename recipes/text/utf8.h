// UTF-8 as the tokenizer pipeline reads and writes it: code points in and out, and text that is not valid
// UTF-8 made valid the way Rust's String::from_utf8_lossy does (each maximal invalid subsequence becomes one
// U+FFFD), which is what reaches Hugging Face tokenizers when a binding is handed bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb::text {

constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the sequence a lead byte starts (1 for ASCII and for bytes that cannot lead).
inline size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

inline size_t utf8_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// The code point at `p` in valid UTF-8; *length receives its byte length.
inline char32_t decode_utf8(const char* p, size_t* length) {
  const auto b0 = static_cast<unsigned char>(p[0]);
  if (b0 < 0x80) {
    *length = 1;
    return b0;
  }
  const auto cont = [&](int i) { return static_cast<char32_t>(static_cast<unsigned char>(p[i]) & 0x3F); };
  if (b0 < 0xE0) {
    *length = 2;
    return (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1);
  }
  if (b0 < 0xF0) {
    *length = 3;
    return (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
  }
  *length = 4;
  return (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
}

void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(const std::u32string& cps);
std::u32string to_code_points(std::string_view valid_utf8);
size_t count_chars(std::string_view valid_utf8);

// Length of the valid sequence at `p` (at most `n` bytes), or 0 when it is not valid UTF-8.
size_t valid_sequence_length(const unsigned char* p, size_t n);
bool is_valid_utf8(std::string_view bytes);

// `bytes` with every maximal invalid subsequence replaced by U+FFFD (Rust's from_utf8_lossy). When
// `original_offset` is given it receives, for each byte boundary of the result (size() + 1 entries), the
// byte offset in `bytes` it stands for.
std::string lossy_utf8(std::string_view bytes, std::vector<size_t>* original_offset = nullptr);

}  // namespace tb::text
