// Python str semantics over UTF-8 text: strings count, index and slice code points, and case mapping,
// whitespace and character classes follow Unicode as Python's str methods do (utf8proc's data).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb::text::jinja::detail {

std::u32string utf8_decode(const std::string& s);  // invalid bytes become U+FFFD
std::string utf8_encode(const std::u32string& s);
void utf8_append(std::string& out, char32_t c);
size_t utf8_length(const std::string& s);

bool py_isspace(char32_t c);  // str.isspace()
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
bool py_isdecimal(char32_t c);
bool py_isnumeric(char32_t c);
bool py_isalnum(char32_t c);
bool py_islower_char(char32_t c);
bool py_isupper_char(char32_t c);
bool py_iscased(char32_t c);
bool py_isprintable(char32_t c);
// str.isupper() (upper) / str.islower(): at least one cased character, and every cased one upper (lower).
bool py_is_all_cased(const std::string& s, bool upper);

std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_swapcase(const std::string& s);
std::string py_title(const std::string& s);       // str.title()
std::string py_capitalize(const std::string& s);  // str.capitalize()
std::string py_casefold(const std::string& s);

// str.strip/lstrip/rstrip: `chars` unset strips whitespace.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit: `sep` unset splits on runs of whitespace.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count);
// str.find / rfind over code point indices ([start, end) already clamped Python-style).
int64_t py_find(const std::string& s, const std::string& sub, std::optional<int64_t> start, std::optional<int64_t> end,
                bool from_right);
int64_t py_count(const std::string& s, const std::string& sub);
std::string py_repr_string(const std::string& s);

// Python slice indices: resolves optional start/stop/step against a length.
struct SliceIndices {
  int64_t start, stop, step, count;
};
SliceIndices resolve_slice(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step);

}  // namespace tb::text::jinja::detail
