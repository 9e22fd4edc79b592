#include "text/utf8.h"

namespace tb::text {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(const std::u32string& cps) {
  std::string out;
  out.reserve(cps.size());
  for (const char32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::u32string to_code_points(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    out.push_back(decode_utf8(s.data() + i, &n));
    i += n;
  }
  return out;
}

size_t count_chars(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

namespace {

// How many bytes of the sequence at `p` are a valid prefix (the lead byte counts when it can lead): the
// length of the maximal invalid subpart when the whole sequence is not valid.
struct SequenceCheck {
  size_t valid_length;  // > 0: a whole valid character of this length
  size_t invalid_length;
};

SequenceCheck check_sequence(const unsigned char* p, size_t n) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return {1, 0};
  size_t width = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    width = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF)
    width = 3;
  else if (b0 >= 0xF0 && b0 <= 0xF4)
    width = 4;
  if (width == 0) return {0, 1};
  const auto is_cont = [](unsigned char b) { return (b & 0xC0) == 0x80; };
  if (n < 2) return {0, 1};
  const unsigned char b1 = p[1];
  bool second_ok;
  if (width == 2) {
    second_ok = is_cont(b1);
  } else if (width == 3) {
    second_ok = (b0 == 0xE0) ? (b1 >= 0xA0 && b1 <= 0xBF) : (b0 == 0xED) ? (b1 >= 0x80 && b1 <= 0x9F) : is_cont(b1);
  } else {
    second_ok = (b0 == 0xF0) ? (b1 >= 0x90 && b1 <= 0xBF) : (b0 == 0xF4) ? (b1 >= 0x80 && b1 <= 0x8F) : is_cont(b1);
  }
  if (!second_ok) return {0, 1};
  if (width == 2) return {2, 0};
  if (n < 3 || !is_cont(p[2])) return {0, 2};
  if (width == 3) return {3, 0};
  if (n < 4 || !is_cont(p[3])) return {0, 3};
  return {4, 0};
}

}  // namespace

size_t valid_sequence_length(const unsigned char* p, size_t n) { return check_sequence(p, n).valid_length; }

bool is_valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = check_sequence(p + i, n - i).valid_length;
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string lossy_utf8(std::string_view bytes, std::vector<size_t>* original_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  std::string out;
  out.reserve(n + 8);
  if (original_offset) {
    original_offset->clear();
    original_offset->reserve(n + 9);
  }
  for (size_t i = 0; i < n;) {
    const auto c = check_sequence(p + i, n - i);
    if (c.valid_length > 0) {
      for (size_t k = 0; k < c.valid_length; ++k) {
        out.push_back(static_cast<char>(p[i + k]));
        if (original_offset) original_offset->push_back(i + k);
      }
      i += c.valid_length;
    } else {
      append_utf8(out, kReplacementChar);
      if (original_offset) original_offset->insert(original_offset->end(), 3, i);
      i += c.invalid_length;
    }
  }
  if (original_offset) original_offset->push_back(n);
  return out;
}

}  // namespace tb::text
