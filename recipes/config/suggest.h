// "Did you mean ...?" for misspelled keys, components and config names.
#pragma once

#include <string>
#include <vector>

namespace tb::config {

// The candidate closest to `word` by edit distance (case-insensitive), also matching common synonyms
// (learning_rate -> lr, num_epochs -> epochs); empty when nothing is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
// "a, b, c" (at most `limit` names, then ", ...").
std::string join_names(const std::vector<std::string>& names, size_t limit = 12);

}  // namespace tb::config
