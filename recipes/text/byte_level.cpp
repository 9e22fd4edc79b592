#include "text/byte_level.h"

#include "text/utf8.h"

namespace tb::text {
namespace {

struct ByteAlphabet {
  char32_t to_char[256];
  int16_t to_byte[0x144];  // the alphabet lies below U+0144
  ByteAlphabet() {
    for (auto& b : to_byte) b = -1;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

char32_t byte_to_char(unsigned char byte) { return alphabet().to_char[byte]; }

int char_to_byte(char32_t cp) { return cp < 0x144 ? alphabet().to_byte[cp] : -1; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) append_utf8(out, byte_to_char(static_cast<unsigned char>(c)));
  return out;
}

bool byte_level_to_bytes(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    const int b = char_to_byte(decode_utf8(s.data() + i, &len));
    if (b < 0) return false;
    out->push_back(static_cast<char>(b));
    i += len;
  }
  return true;
}

void byte_level_changes(std::string_view text, std::vector<CharChange>& out) {
  out.clear();
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence_length(static_cast<unsigned char>(text[i]));
    for (size_t k = 0; k < len && i + k < text.size(); ++k)
      out.push_back({byte_to_char(static_cast<unsigned char>(text[i + k])), k > 0 ? 1 : 0});
    i += len;
  }
}

}  // namespace tb::text
