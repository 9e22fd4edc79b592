// The string tests C++17's std::string lacks (C++20 has starts_with / ends_with): one definition for the
// whole engine and its front ends.
#pragma once

#include <string_view>

namespace tb::text {

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace tb::text
